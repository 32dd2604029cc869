{#- A warning per batch of entity_state_batches: the batches where `column_name` (rows_rejected, rows_late) is more
    than the share `entity_state__<setting>` of the batch's rows_landed. Reads the recent batches only, those that
    arrived within `recent_hours` of the newest batch the table has counted: a literal filter on
    `batch_ingested_at`, which Delta's file statistics skip old files by, so the check costs about the same after
    any number of runs and can follow every scheduled run. Warn level with stored failures by default: the batch has been applied
    (or quarantined) already, the warning says which producer to look at. -#}
{% test batch_share_at_most(model, column_name, setting, recent_hours=24) %}
{{ config(severity='warn', store_failures=true) }}
{%- set max_share = entity_state.setting(setting) -%}
{%- if max_share is not number or max_share < 0 or max_share > 1 -%}
    {{ exceptions.raise_compiler_error(
        "var entity_state__" ~ setting ~ " must be a share between 0 and 1; got '" ~ max_share ~ "'"
    ) }}
{%- endif -%}
{%- set newest = entity_state.progress_of(model, 'batch_ingested_at') -%}
{%- set since = none if newest is none else newest - (recent_hours * 3600 * 1000000) | int -%}
with

recent as (
    select
        batch_ingested_at,
        source_files,
        rows_landed,
        {{ column_name }} as rows_counted,
        window_end_ingested_at
    from {{ model }}
    {%- if since is not none %}
    where batch_ingested_at > {{ entity_state.micros_to_timestamp(since) }}
    {%- endif %}
),

final as (
    select
        batch_ingested_at,
        source_files,
        rows_landed,
        rows_counted as {{ column_name }},
        round(rows_counted / rows_landed, 4) as share,
        {{ max_share }} as max_share,
        window_end_ingested_at
    from recent
    where rows_counted > {{ max_share }} * rows_landed
)

select * from final
{% endtest %}
