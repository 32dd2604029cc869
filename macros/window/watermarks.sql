{#- Watermarks are the highest `ingested_at` (as epoch microseconds) a state table has fully applied. They are
    stored as a table property of the state table itself, so a full refresh (which recreates the table) resets
    its watermark with it, and no helper table can go stale. -#}

{% macro watermark_property() %}
    {{ return('entity_state.watermark_micros') }}
{% endmacro %}

{% macro read_watermark(relation) %}
    {{ return(entity_state._recorded_watermark(entity_state.table_properties(relation))) }}
{% endmacro %}

{#- The watermark recorded in a table's properties (table_properties), or none. -#}
{% macro _recorded_watermark(properties) %}
    {%- set recorded = properties.get(entity_state.watermark_property()) -%}
    {{ return(recorded | int if recorded is not none else none) }}
{% endmacro %}

{#- Name of the table property where a state table records, before each write to it, the window that write is for
    (record_write_intent), and again with its watermark after it (record_watermark): a write that did not finish, or
    whose watermark was never recorded, leaves this property ahead of the watermark (is_every_write_recorded). -#}
{% macro write_intent_property() %}
    {{ return('entity_state.write_intent_micros') }}
{% endmacro %}

{#- Whether a state table's properties (table_properties) show that every write to it finished and had its
    watermark recorded: its write intent is at or behind its watermark. False when either is missing (a table built
    before intents were recorded, or whose build was not recorded yet). -#}
{% macro is_every_write_recorded(properties) %}
    {%- set recorded = entity_state._recorded_watermark(properties) -%}
    {%- set intent = properties.get(entity_state.write_intent_property()) -%}
    {{ return(recorded is not none and intent is not none and intent | int <= recorded) }}
{% endmacro %}

{#- The table properties of a relation, as a dict (empty for none). Read once per invocation and table (run_memo):
    a table is read as its own model's state, and as other models' seed, bound or closed stays. Until its model
    changes them in this invocation they are the ones dbt's listing of the schema showed at the start of the invocation
    (_listed_table_properties), so reading them costs no statement; after that change (forget_table_properties) they
    are asked of the catalog. -#}
{% macro table_properties(relation) %}
    {%- if not execute or relation is none -%}
        {{ return({}) }}
    {%- endif -%}
    {%- set read = entity_state.run_memo('table_properties') -%}
    {%- set key = entity_state._memo_key(relation) -%}
    {%- if key not in read -%}
        {%- set listed = none if key in entity_state.run_memo('changed_tables')
            else entity_state._listed_table_properties(relation) -%}
        {%- if listed is none -%}
            {%- set listed = {} -%}
            {#- a table never built has none: `dbt compile` or `docs generate` on a new schema asks nothing -#}
            {%- set exists = key in entity_state.run_memo('changed_tables') or adapter.get_relation(
                database=relation.database, schema=relation.schema, identifier=relation.identifier
            ) is not none -%}
            {#- render(): the table's name even for a ref that `--empty` turned into an empty query -#}
            {%- for row in (run_query('show tblproperties ' ~ relation.render()).rows if exists else []) -%}
                {%- do listed.update({row[0]: row[1]}) -%}
            {%- endfor -%}
        {%- endif -%}
        {%- do read.update({key: listed}) -%}
    {%- endif -%}
    {{ return(dict(read[key])) }}
{% endmacro %}

{#- A table's properties as dbt's listing of its schema at the start of the invocation showed them (`show table
    extended`, the `Table Properties: [key=value, ...]` line of the relation's `information` in dbt's relation
    cache), or none when that listing does not tell them for sure: the table is not in the cache or was cached
    without the listing's text (built during the invocation, or listed by a fallback without it), or the line does
    not parse. No line means no properties. The values are the ones `show tblproperties` gives, redacted alike. The
    pairs are split at each ", " that a key and "=" follow; the values this project writes (numbers, words, flat JSON
    objects, whose keys are quoted) have none. -#}
{% macro _listed_table_properties(relation) %}
    {{ return(entity_state._table_properties_in_listing(entity_state._listed_description(relation))) }}
{% endmacro %}

{#- A relation's `show table extended` text (`information`) as dbt's listing of its schema at the start of the
    invocation holds it in the relation cache, or none: the relation is not in the cache, or was cached without the
    listing's text (built during the invocation, or listed by a fallback without it). -#}
{% macro _listed_description(relation) %}
    {%- set cached = adapter.get_relation(
        database=relation.database, schema=relation.schema, identifier=relation.identifier
    ) -%}
    {%- set information = cached.information if cached is not none else none -%}
    {{ return(information if information and modules.re.search('(?m)^Type: ', information) else none) }}
{% endmacro %}

{#- The table properties in one table's `show table extended` text (`information`), as _listed_table_properties
    reads them: none when the text is not such a listing or its line does not parse, an empty dict when it has no
    such line. -#}
{% macro _table_properties_in_listing(information) %}
    {%- if not information or not modules.re.search('(?m)^Type: ', information) -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set listed = modules.re.search('(?m)^Table Properties: *\\[(.*)\\] *$', information) -%}
    {%- if listed is none -%}
        {{ return(none if 'Table Properties:' in information else {}) }}
    {%- endif -%}
    {%- set properties = {} -%}
    {%- for pair in modules.re.split(', (?=[A-Za-z_][\\w.-]*=)', listed.group(1)) if pair -%}
        {%- set parts = pair.partition('=') -%}
        {%- if not parts[1] -%}
            {{ return(none) }}
        {%- endif -%}
        {%- do properties.update({parts[0]: parts[2]}) -%}
    {%- endfor -%}
    {{ return(properties) }}
{% endmacro %}

{#- Name of the table property that stores which build of the table it follows a table derived from another's
    writes was computed from (state_window, key `follows`). -#}
{% macro followed_build_property() %}
    {{ return('entity_state.followed_build') }}
{% endmacro %}

{#- Name of the table property where a table that holds its own closed stays records the bound of its last window's
    repair read (repair_history_bound), with that window, for a table of the same window to reuse (state_window). -#}
{% macro repair_history_property() %}
    {{ return('entity_state.repair_history') }}
{% endmacro %}

{#- Name of the table property where a table that holds its own closed stays records the last window whose walk it
    wrote whole into one partition (every closed stay of the walk, the entities it repaired included), with that
    window's low, high and seed, and the partition: a table of the same window and seed reads each entity's open
    stay from there instead of walking again (state_window, `walked_partition`). -#}
{% macro walked_window_property() %}
    {{ return('entity_state.walked_window') }}
{% endmacro %}

{#- Name of the table property where a table written one partition per window records the window its build ended
    at: windows only move forward, so no write of the table ended before it (repair_history_bound). -#}
{% macro first_window_property() %}
    {{ return('entity_state.first_window_micros') }}
{% endmacro %}

{#- Name of the table property where a `compacted_log` (state_window) records how many windows it holds that were
    written since its build or its last compaction, that one included: state_window compacts it when they reach
    entity_state__compact_after_windows. A window whose write stopped before its watermark is not counted. -#}
{% macro logged_windows_property() %}
    {{ return('entity_state.logged_windows') }}
{% endmacro %}

{#- When a table was created, as the metastore says (text), or none: a full refresh or a rebuild creates the table
    anew, so this tells one build of a state table from the next. A relation from dbt's relation cache carries the
    `show table extended` text it was listed with when the invocation started, which has the same line; a table
    built during the invocation is cached without that text, and is asked with a `describe`. -#}
{% macro table_created_at(relation) %}
    {%- if not execute or relation is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set listed = modules.re.search('(?m)^Created Time: *(.*?) *$', relation.information or '') -%}
    {%- if listed -%}
        {{ return(listed.group(1)) }}
    {%- endif -%}
    {%- for row in run_query('describe table extended ' ~ relation).rows if row[0] == 'Created Time' -%}
        {{ return(row[1]) }}
    {%- endfor -%}
    {{ return(none) }}
{% endmacro %}

{#- Post-hook of the state models: records the watermark of the model's write plan, the one its rows were computed
    for (as its write intent too: every write so far finished and is recorded),
    for a table that follows another's writes, which build of that table it followed, for a table written one
    partition per window and just built, the window the build ended at, and for a table that holds its own closed
    stays, the bound of its window's repair read and, when its partition holds the window's whole walk, that
    window, and for a `compacted_log`, how many windows it holds since its build or its last compaction. -#}
{% macro record_watermark() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set plan = entity_state.read_write_plan(model.compiled_code) -%}
    {%- set properties = [] -%}
    {%- if plan.get('watermark') is not none -%}
        {%- do properties.append("'" ~ entity_state.watermark_property() ~ "' = '" ~ plan.watermark ~ "'") -%}
        {%- do properties.append("'" ~ entity_state.write_intent_property() ~ "' = '" ~ plan.watermark ~ "'") -%}
    {%- endif -%}
    {%- if plan.get('followed_build') is not none -%}
        {%- do properties.append("'" ~ entity_state.followed_build_property() ~ "' = '" ~ plan.followed_build ~ "'") -%}
    {%- endif -%}
    {%- if plan.get('first_window') is not none -%}
        {%- do properties.append("'" ~ entity_state.first_window_property() ~ "' = '" ~ plan.first_window ~ "'") -%}
    {%- endif -%}
    {%- if plan.get('repair_history') is not none -%}
        {%- do properties.append(
            "'" ~ entity_state.repair_history_property() ~ "' = '" ~ tojson(plan.repair_history, sort_keys=true) ~ "'"
        ) -%}
    {%- endif -%}
    {%- if plan.get('logged_windows') is not none -%}
        {%- do properties.append(
            "'" ~ entity_state.logged_windows_property() ~ "' = '" ~ plan.logged_windows ~ "'"
        ) -%}
    {%- endif -%}
    {%- if plan.get('walked_window') is not none -%}
        {%- do properties.append(
            "'" ~ entity_state.walked_window_property() ~ "' = '" ~ tojson(plan.walked_window, sort_keys=true) ~ "'"
        ) -%}
    {%- endif -%}
    {%- if not properties -%}
        {{ return('') }}
    {%- endif -%}
    {%- do entity_state.forget_table_properties(this) -%}
    alter table {{ this }} set tblproperties ({{ properties | join(', ') }})
{% endmacro %}

{#- How far a table written one partition per window (`entity_state_segments`, `events_rejected`) has emitted: its
    recorded watermark, or further if a run wrote rows and then stopped before recording it (the rows themselves then
    say how far it got: `column` is the arrival time each row was emitted for). `properties` are the table's
    (table_properties; the caller reads them once, as it needs them too). The rows are read only when the table's
    write intent is ahead of its watermark, or missing (a table whose build was not recorded yet, or built before
    intents were recorded): otherwise every write was recorded, and the query would cost a Spark job for nothing. -#}
{% macro emitted_watermark(relation, column, properties) %}
    {%- if not execute or relation is none -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set recorded = entity_state._recorded_watermark(properties) -%}
    {%- if entity_state.is_every_write_recorded(properties) -%}
        {{ return(recorded) }}
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

{#- Pre-hook of the state tables written in place (all but the time-in-state table, which is built anew whenever it
    is written): before a write to the existing table, records the window it is for as the table's write intent
    (write_intent_property), so that a run killed during the write or before its watermark is recorded leaves the
    intent ahead of it. Renders nothing when the run writes nothing there, or builds the table anew: a new table has
    no intent until its post-hook records one with its watermark, and until then it is treated as possibly
    unrecorded (is_every_write_recorded). -#}
{% macro record_write_intent() %}
    {%- if not execute -%}
        {{ return('') }}
    {%- endif -%}
    {%- set plan = entity_state.read_write_plan(model.compiled_code) -%}
    {%- if plan.get('is_window_empty') or plan.get('writes_no_rows') or plan.get('rebuild') is not none
        or not entity_state.has_stored_state() -%}
        {{ return('') }}
    {%- endif -%}
    {%- if plan.get('watermark') is none -%}
        {{ exceptions.raise_compiler_error(
            "record_write_intent: the write plan of " ~ this ~ " writes rows but gives no watermark; render "
            ~ "entity_state.write_plan(**window.plan) from state_window in the model"
        ) }}
    {%- endif -%}
    {%- do entity_state.forget_table_properties(this) -%}
    alter table {{ this }} set tblproperties ('{{ entity_state.write_intent_property() }}' = '{{ plan.watermark }}')
{% endmacro %}
