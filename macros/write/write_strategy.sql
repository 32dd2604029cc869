{#- The one place that decides how a state table is written: `new_partition` adds one partition that no other write
    uses (insert_new_partition_sql); `append` adds rows. No state table replaces rows in place: plain parquet, the
    only format available to this project, has no MERGE, and a partition overwrite can lose the rows of a run killed
    midway. A table format with MERGE (Delta, Iceberg, Hudi) would get its mode here, with a tested write path. -#}
{% macro state_write_strategy(mode) %}
    {%- set strategies = {
        'new_partition': 'insert_new_partition',
        'append': 'append',
    } -%}
    {%- if mode not in strategies -%}
        {{ exceptions.raise_compiler_error(
            "state_write_strategy: unknown mode '" ~ mode ~ "'; use one of " ~ (strategies.keys() | list | join(', '))
        ) }}
    {%- endif -%}
    {%- set file_format = config.get('file_format', 'parquet') -%}
    {%- if execute and file_format != 'parquet' -%}
        {{ exceptions.raise_compiler_error(
            "state_write_strategy supports file_format 'parquet' only (got '" ~ file_format ~ "'). Another format "
            ~ "needs its write path added and tested in macros/write/write_strategy.sql first."
        ) }}
    {%- endif -%}
    {{ return(strategies[mode]) }}
{% endmacro %}

{#- The write of the strategy `insert_new_partition`: the model's rows go into one partition, named by the model
    in its write plan (write_plan), that no earlier write has used. Why not a dynamic partition overwrite: that lists
    every partition of the table from the metastore on each write, so a table that gains a partition per run slows
    every run down as its history grows; a write to a fully named partition looks up that partition only. Why a
    partition of its own: such a write commits through the `_temporary` folder at the table's root, and its commit
    takes in every task output left there, including those of an earlier write killed before its commit. Those can
    only belong to that killed write's own partition, which was never registered in the metastore (registration
    comes after the commit), so readers, who see registered partitions only, never see them. `dest_columns`: the
    table's columns when the caller has read them already (none: read here). -#}
{% macro insert_new_partition_sql(source_relation, target_relation, partition_by, compiled_code, dest_columns=none) %}
    {%- set partition_columns = [partition_by] if partition_by is string else (partition_by or []) -%}
    {%- if partition_columns | length != 1 -%}
        {{ exceptions.raise_compiler_error(
            "incremental_strategy 'insert_new_partition' writes one partition: give " ~ target_relation
            ~ " exactly one partition_by column (got " ~ (partition_columns | join(', ') or 'none') ~ ")"
        ) }}
    {%- endif -%}
    {%- set partition = entity_state.read_write_plan(compiled_code).get('partition') -%}
    {%- if partition is none -%}
        {{ exceptions.raise_compiler_error(
            "incremental_strategy 'insert_new_partition' needs the partition to write: render "
            ~ "entity_state.write_plan(partition=value) in the model of " ~ target_relation
            ~ ", with the value it gives its partition column"
        ) }}
    {%- endif -%}
    {%- set partition_column = partition_columns[0] -%}
    {%- set table_columns = dest_columns if dest_columns is not none
        else adapter.get_columns_in_relation(target_relation) -%}
    {%- set dest_columns = table_columns | rejectattr('name', 'equalto', partition_column) | list -%}
    insert into table {{ target_relation }} partition ({{ partition_column }} = '{{ partition }}')
    select {{ dest_columns | map(attribute='quoted') | join(', ') }} from {{ source_relation }}
{% endmacro %}
