{#- Watermarks are the highest `ingested_at` (as epoch microseconds) a state table has fully applied. They are
    stored as a table property of the state table itself, so a full refresh (which recreates the table) resets
    its watermark with it, and no helper table can go stale. -#}

{% macro watermark_property() %}
    {{ return('entity_state.watermark_micros') }}
{% endmacro %}

{% macro read_watermark(relation) %}
    {%- if not execute or relation is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set properties = run_query('show tblproperties ' ~ relation) -%}
    {%- for row in properties.rows if row[0] == entity_state.watermark_property() -%}
        {{ return(row[1] | int) }}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}

{#- Post-hook of the state models: records the watermark of the model's write plan, the one its rows were computed
    for. -#}
{% macro record_watermark() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set watermark = entity_state.read_write_plan(model.compiled_code).get('watermark') -%}
    {%- if watermark is none -%}
        {{ return('') }}
    {%- endif -%}
    alter table {{ this }} set tblproperties ('{{ entity_state.watermark_property() }}' = '{{ watermark }}')
{% endmacro %}

{#- How far a table written one partition per window (`entity_state_segments`, `events_rejected`) has emitted:
    `recorded`, its recorded watermark (read_watermark; the caller reads it once and passes it, as it usually needs
    it too), or further if a run wrote rows and then stopped before recording it (the rows themselves then say how
    far it got: `column` is the arrival time each row was emitted for). -#}
{% macro emitted_watermark(relation, column, recorded) %}
    {%- if not execute or relation is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set query -%}
        select unix_micros(max({{ column }})) from {{ relation }}
        {%- if recorded is not none %}
        where {{ entity_state.emitted_since(recorded) }}
        {%- endif %}
    {%- endset -%}
    {%- set written = run_query(query).columns[0].values()[0] -%}
    {%- set candidates = [] -%}
    {%- for value in [recorded, written] if value is not none -%}
        {%- do candidates.append(value | int) -%}
    {%- endfor -%}
    {{ return(candidates | max if candidates else none) }}
{% endmacro %}
