{#- dbt-spark's merge, found first by dbt's dispatch (a root project's macro wins over the adapter's), for the one
    model whose yml meta says `merges_stays` (entity_state_segments): it needs a delete clause and an ON predicate
    decided from data, which dbt-spark's merge has no options for. Every other merge model gets dbt-spark's own. -#}
{% macro spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates) %}
    {%- if not config.get('meta', {}).get('merges_stays') -%}
        {{ return(dbt.spark__get_merge_sql(target, source, unique_key, dest_columns, incremental_predicates)) }}
    {%- endif -%}
    {{ return(entity_state._stays_merge_sql(target, source, unique_key)) }}
{% endmacro %}

{#- The merge of a run's stays (entity_state_segments' model) into the table: by key, a stay the walk gave is
    updated or inserted, and a retracted one (a repair's stored stay the walk did not give again, which comes with a
    null `is_open`) is deleted. The ON clause holds to the stays a run can change, a literal predicate on the table's partition and
    end times (repair_plan, decided again as the model decided it), so Delta reads the open stays, and the closed ones
    only as far back as a repair reaches. -#}
{% macro _stays_merge_sql(target, source, unique_key) %}
    {%- set window = entity_state.manifest_window(
        entity_state.progress_of(target, 'watermark_ingested_at', 'is_open'), 'rows_applicable'
    ) -%}
    {%- set plan = entity_state.repair_plan(window, target) -%}
    {%- set columns = adapter.get_columns_in_relation(target) | map(attribute='name') | list -%}
    merge into {{ target }} as stored
    using {{ source }} as walked
    on {{ entity_state.replaceable_stays_predicate(plan, 'stored') }}
        {%- for key in unique_key %}
        and walked.{{ key }} = stored.{{ key }}
        {%- endfor %}
    when matched and walked.is_open is null then delete
    when matched then update set
        {%- for column in columns %}
        {{ column }} = walked.{{ column }}{{ ',' if not loop.last }}
        {%- endfor %}
    when not matched and walked.is_open is not null then insert ({{ columns | join(', ') }})
        values ({% for column in columns %}walked.{{ column }}{{ ', ' if not loop.last }}{% endfor %})
{% endmacro %}
