{#- Why a landed row cannot be applied, or null if it can. Keys are judged after trimming; the first failing
    check wins, in column order. One definition for the staging filter and the quarantine, so a row is either
    applied or rejected, never both and never neither. An event stamped later than its arrival (beyond the allowed
    clock skew) is rejected too: that an event cannot arrive before it happened is what bounds a repair's read of
    the landed history (repair_history_predicate). -#}
{% macro reject_reason(tenant_id, entity_id, state_id, event_time, event_time_text, ingested_at) %}
    case
        {%- for column, name in [(tenant_id, 'tenant_id'), (entity_id, 'entity_id'), (state_id, 'state_id')] %}
        when {{ column }} is null then 'null_{{ name }}'
        when trim({{ column }}) = '' then 'empty_{{ name }}'
        {%- endfor %}
        when {{ event_time }} is null and nullif(trim({{ event_time_text }}), '') is not null
            then 'unparseable_event_time'
        when {{ event_time }} is null then 'null_event_time'
        when unix_micros({{ event_time }}) > unix_micros({{ ingested_at }}) + {{ entity_state.event_clock_skew_micros() }}
            then 'event_time_after_arrival'
    end
{% endmacro %}

{#- The landed rows that can be applied, trimmed, each distinct event once: the body of stg_events. `landed_filter`
    narrows stg_landing_events first: a state model passes its window there, where the filter on the landing file's
    modification time still reaches the file listing (after the dedup it no longer could). Rows without a full key
    or an event time cannot be placed on any timeline: events_rejected keeps them. `each_row_once=false` leaves
    repeated rows in, for a reader that aggregates them anyway: without the distinct's shuffle, a join above the
    scan runs in the scan's own stage (the repair's read of history relies on it). `spread_by_entity=true` (with
    repeated rows in) hash-partitions the rows by entity: a reader whose aggregations and windows all group by the
    entity, or a finer key, then runs them without another shuffle. -#}
{% macro applicable_events(landed_filter='true', each_row_once=true, spread_by_entity=false) %}
    {%- if spread_by_entity and each_row_once -%}
        {{ exceptions.raise_compiler_error(
            'applicable_events: spread_by_entity=true needs each_row_once=false (a distinct after the spread would '
            ~ 'shuffle the rows again); give the reader the repeated rows, and let it aggregate them'
        ) }}
    {%- endif %}
    select {{ 'distinct' if each_row_once }}{{ '/*+ repartition(tenant_id, entity_id) */' if spread_by_entity }}
        trim(tenant_id) as tenant_id,
        trim(entity_id) as entity_id,
        trim(state_id) as state_id,
        event_time,
        ingested_at
    from {{ ref('stg_landing_events') }}
    where reject_reason is null
        and ({{ landed_filter }})
{% endmacro %}
