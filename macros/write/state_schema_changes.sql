{#- on_schema_change='fail' for a state table: the run stops before writing when the stored table's columns differ
    from the model's (a column added, dropped or retyped by hand, or a model changed without a rebuild). dbt's own
    check would suggest `append_new_columns` or `sync_all_columns`, which would alter a state table in place; the
    message here names the differences and the two safe ways out. Costs two `describe` statements per model and run
    (the run's temporary view and the table). -#}
{% macro fail_on_state_schema_change(source_relation, target_relation) %}
    {%- set changes = check_for_schema_changes(source_relation, target_relation) -%}
    {%- if changes['schema_changed'] -%}
        {%- set in_table = [] -%}
        {%- for column in changes['target_not_in_source'] -%}
            {%- do in_table.append(column.name ~ ' ' ~ column.data_type) -%}
        {%- endfor -%}
        {%- set in_model = [] -%}
        {%- for column in changes['source_not_in_target'] -%}
            {%- do in_model.append(column.name ~ ' ' ~ column.data_type) -%}
        {%- endfor -%}
        {%- set retyped = [] -%}
        {%- for change in changes['new_target_types'] -%}
            {%- do retyped.append(change['column_name'] ~ ' (the model gives ' ~ change['new_type'] ~ ')') -%}
        {%- endfor -%}
        {{ exceptions.raise_compiler_error(
            "The columns of the state table " ~ target_relation ~ " no longer match its model "
            ~ "(on_schema_change='fail'); nothing was written. "
            ~ "Only in the table: " ~ (in_table | join(', ') or 'none') ~ ". "
            ~ "Only in the model: " ~ (in_model | join(', ') or 'none') ~ ". "
            ~ "Other type in the table: " ~ (retyped | join(', ') or 'none') ~ ". "
            ~ "A state table is never altered to fit: undo the change to the table by hand, or rebuild it from the "
            ~ "landed history with `dbt run --full-refresh -s " ~ model.name ~ "`."
        ) }}
    {%- endif -%}
{% endmacro %}
