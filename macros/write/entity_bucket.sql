{#- Hash bucket of an entity; `entity_state_current` is partitioned by it. -#}
{% macro entity_bucket(tenant_column='tenant_id', entity_column='entity_id') %}
    {%- set buckets = entity_state.setting('buckets') | int -%}
    {%- if buckets < 1 -%}
        {{ exceptions.raise_compiler_error('var entity_state__buckets must be a positive integer, got ' ~ buckets) }}
    {%- endif -%}
    cast(pmod(xxhash64({{ tenant_column }}, {{ entity_column }}), {{ buckets }}) as int)
{% endmacro %}
