"""Helpers around the entity_state dbt project: landing event batches and running the demo."""
