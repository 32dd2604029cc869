{#- Time in state per tenant, state and day computed from every stay, as entity_state_daily would from scratch:
    the definition its incremental runs must equal, for the audit and the unit tests. Nothing reads it on the
    incremental path. -#}
{{ entity_state.time_in_state_per_day(ref('entity_state_view')) }}
