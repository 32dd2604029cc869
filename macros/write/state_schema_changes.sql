{#- on_schema_change='fail' for a state table with an enforced contract: the run stops before writing when the
    stored table's columns differ from the ones the model's yml declares (a column added, dropped or retyped by hand,
    or a model changed without a rebuild). The contract holds the model's query to those columns whenever the table
    is built, so the query itself is not analysed for the check (the materialization writes from it directly). dbt's
    own check would suggest `append_new_columns` or `sync_all_columns`, which would alter a state table in place;
    the message here names the differences and the two safe ways out. `stored_columns` are the table's columns
    (adapter.get_columns_in_relation, one `describe`), which the materialization then writes in that order. -#}
{% macro fail_on_state_schema_change(target_relation, stored_columns) %}
    {%- set differences = entity_state._contract_differences(stored_columns) -%}
    {%- if differences -%}
        {{ exceptions.raise_compiler_error(
            "The columns of the state table " ~ target_relation ~ " no longer match its model "
            ~ "(on_schema_change='fail'); nothing was written. " ~ differences
            ~ " A state table is never altered to fit: undo the change to the table by hand, or rebuild it from the "
            ~ "landed history with `dbt run --full-refresh -s " ~ model.name ~ "`."
        ) }}
    {%- endif -%}
{% endmacro %}

{#- How `columns` (a table's, adapter.get_columns_in_relation) differ from the ones the model's yml declares, in
    names and types (both lowercase, without spaces), as a sentence per kind of difference; an empty string when they
    are the same. Types are first compared as written, which needs no query. Only where one differs are the yml's
    types read back from Spark (`describe query` of dbt's `cast(null as ...)` select: analysed, not run), so that an
    alias such as `integer`, `long` or `dec(10,2)` is compared as the type Spark makes of it, as dbt's own contract
    check compares them. -#}
{% macro _contract_differences(columns) %}
    {%- set declared = entity_state._column_types(model['columns'].values(), 'data_type') -%}
    {%- set stored = entity_state._column_types(columns, 'dtype') -%}
    {%- set written_otherwise = [] -%}
    {%- for name, data_type in declared.items() if name in stored and stored[name] != data_type -%}
        {%- do written_otherwise.append(name) -%}
    {%- endfor -%}
    {%- if written_otherwise -%}
        {%- call statement('contract_types_as_spark_gives_them', fetch_result=True) -%}
            describe query {{ get_empty_schema_sql(model['columns']) }}
        {%- endcall -%}
        {%- for row in load_result('contract_types_as_spark_gives_them').table.rows -%}
            {%- do declared.update({row[0] | lower: row[1] | lower | replace(' ', '')}) -%}
        {%- endfor -%}
    {%- endif -%}
    {%- set in_table, in_model, retyped = [], [], [] -%}
    {%- for name, data_type in stored.items() if name not in declared -%}
        {%- do in_table.append(name ~ ' ' ~ data_type) -%}
    {%- endfor -%}
    {%- for name, data_type in declared.items() -%}
        {%- if name not in stored -%}
            {%- do in_model.append(name ~ ' ' ~ data_type) -%}
        {%- elif stored[name] != data_type -%}
            {%- do retyped.append(name ~ ' ' ~ stored[name] ~ ' (the model gives ' ~ data_type ~ ')') -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if not (in_table or in_model or retyped) -%}
        {{ return('') }}
    {%- endif -%}
    {{ return(
        "Only in the table: " ~ (in_table | join(', ') or 'none') ~ ". "
        ~ "Only in the model: " ~ (in_model | join(', ') or 'none') ~ ". "
        ~ "Other type in the table: " ~ (retyped | join(', ') or 'none') ~ "."
    ) }}
{% endmacro %}

{#- Column name -> type of `columns`, both lowercase and the type without spaces, its type read from the attribute
    `type_attribute`: `data_type` for the yml's columns, `dtype` for a table's. -#}
{% macro _column_types(columns, type_attribute) %}
    {%- set types = {} -%}
    {%- for column in columns -%}
        {%- do types.update({column['name'] | lower: (column[type_attribute] or '') | lower | replace(' ', '')}) -%}
    {%- endfor -%}
    {{ return(types) }}
{% endmacro %}

{#- The stored table's columns, checked against the model's as fail_on_state_schema_change does, when the model asks
    for that check (on_schema_change='fail' and an enforced contract); none otherwise. One `describe`, whose columns a
    write then lists in the table's order. -#}
{% macro _checked_state_columns(existing_relation, on_schema_change) %}
    {%- if on_schema_change != 'fail' or not model['contract']['enforced'] -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set stored_columns = adapter.get_columns_in_relation(existing_relation) -%}
    {%- do entity_state.fail_on_state_schema_change(existing_relation, stored_columns) -%}
    {{ return(stored_columns) }}
{% endmacro %}
