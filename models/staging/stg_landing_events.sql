{#- Every landed row, as landed: the one place that reads the landing source (the landing folder, or the user's
    events table with its columns mapped: macros/landing/events_input.sql). Rows that cannot be applied keep
    their reject_reason here; stg_events takes the others and events_rejected keeps these. The source is rendered
    whole even under `--empty`: the landing folder's file columns (`_metadata`) exist on the table only, not on the
    empty query dbt would put in its place, and the models that read this view get none of its rows then anyway. -#}
{%- if execute and entity_state.is_table_input() -%}
    {%- do entity_state.assert_events_table_readable() -%}
{%- endif %}
with

source as (
    select
        {{ entity_state.input_column('tenant_id') }} as tenant_id,
        {{ entity_state.input_column('entity_id') }} as entity_id,
        {{ entity_state.input_column('state_id') }} as state_id,
        {{ entity_state.input_column('event_time') }} as event_time,
        {{ entity_state.input_column('event_time_text') }} as event_time_text,
        {{ entity_state.input_column('ingested_at') }} as ingested_at,
        {{ entity_state.input_column('source_file_name') }} as source_file_name,
        {{ entity_state.input_column('source_file_modified_at') }} as source_file_modified_at
    from {{ source('landing', 'events').render() }}
),

final as (
    select
        tenant_id,
        entity_id,
        state_id,
        event_time,
        event_time_text,
        ingested_at,
        source_file_name,
        source_file_modified_at,
        {{ entity_state.reject_reason(
            'tenant_id', 'entity_id', 'state_id', 'event_time', 'event_time_text', 'ingested_at'
        ) }}
            as reject_reason
    from source
)

select * from final
