{#- Buckets of entity_state_current whose rows are gone, wholly or in part. Spark replaces a rewritten bucket by
    deleting its folder and then renaming the new one in: a run killed during the delete or between the two leaves
    the bucket registered in the metastore with only some or none of its rows, and readers would take the missing
    entities for ones never seen. Every row carries the number of rows its bucket was written with
    (`bucket_entities`), which tells such a bucket from a complete one. Returns the bucket numbers, sorted; an empty
    list when the table does not exist, or when its properties (`properties`, table_properties) show that every
    write to it was recorded after it finished (is_every_write_recorded): only a write that did not finish can lose
    a bucket, and counting the rows would cost two statements and a Spark job for nothing. -#}
{% macro lost_current_buckets(relation, properties) %}
    {%- if not execute or relation is none or entity_state.is_every_write_recorded(properties) -%}
        {{ return([]) }}
    {%- endif -%}
    {%- set registered = [] -%}
    {%- for row in run_query('show partitions ' ~ relation).rows -%}
        {%- do registered.append(row[0].split('=')[1] | int) -%}
    {%- endfor -%}
    {%- set counted = run_query(
        'select entity_bucket, count(*), min(bucket_entities), max(bucket_entities) from ' ~ relation
        ~ ' group by entity_bucket'
    ) -%}
    {%- set complete = [] -%}
    {%- for row in counted.rows if row[1] == row[2] and row[2] == row[3] -%}
        {%- do complete.append(row[0] | int) -%}
    {%- endfor -%}
    {{ return(registered | reject('in', complete) | sort | list) }}
{% endmacro %}
