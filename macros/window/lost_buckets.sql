{#- Buckets of entity_state_current whose rows are gone, wholly or in part. Spark replaces a rewritten bucket by
    deleting its folder and then renaming the new one in: a run killed during the delete or between the two leaves
    the bucket registered in the metastore with only some or none of its rows, and readers would take the missing
    entities for ones never seen. Every row carries the number of rows its bucket was written with
    (`bucket_entities`), which tells such a bucket from a complete one. Returns the bucket numbers, sorted; an empty
    list when the table does not exist. -#}
{% macro lost_current_buckets(relation) %}
    {%- if not execute or relation is none -%}
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
