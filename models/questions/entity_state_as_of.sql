{#- The macro as_of applied to the moment of the var entity_state__as_of (UTC timestamp text; null: now). -#}
{%- set moment_text = entity_state.setting('as_of') -%}
{%- set is_timestamp_text = moment_text is string and modules.re.match(
    '^\\d{4}-\\d{2}-\\d{2}([ T]\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,6})?)?)?$', moment_text | trim
) -%}
{%- if moment_text is not none and not is_timestamp_text -%}
{%- do exceptions.raise_compiler_error(
    "var entity_state__as_of must be a UTC timestamp such as '2026-03-03 09:00:00', or null for now; got '"
    ~ moment_text ~ "'"
) -%}
{%- endif -%}
{%- set moment = 'current_timestamp()' if moment_text is none else "timestamp'" ~ (moment_text | trim) ~ "'" -%}

select
    tenant_id,
    entity_id,
    state_id,
    start_time,
    last_event_ts,
    is_stale
from {{ entity_state.as_of(moment) }} as state_then
