{#- What one dbt invocation (a `dbt run`, `dbt build`) has read of the catalog and the landing files, shared by every
    model it runs: each model decides its own window, so that it is right under any --select, and without a memo the
    models of one run would ask the same questions again (each state table's properties up to four times, the newest
    landed arrival twice). Returns the memo named `name`, a dict. dbt's Jinja offers no variable of our own that
    lasts from one model to the next, but the manifest's flat graph (`graph`) is one dict for every node of the
    invocation, so the memos live there, under the invocation's id: a process that keeps its manifest for several
    invocations (dbtRunner) starts each with empty memos. What a memo holds must stay true for the rest of the
    invocation, or be forgotten by what changes it (forget_table_properties). -#}
{% macro run_memo(name) %}
    {%- set memos = graph.setdefault('entity_state_run_memos', {}) -%}
    {#- setdefault, not a test and an assignment: with several dbt threads, two models making the invocation's first
        call at once get the same dict. Memos of earlier invocations of the process are dropped one by one, never
        this invocation's. -#}
    {%- set memo = memos.setdefault(invocation_id, {}) -%}
    {%- for earlier in memos.keys() | list if earlier != invocation_id -%}
        {%- do memos.pop(earlier, none) -%}
    {%- endfor -%}
    {{ return(memo.setdefault(name, {})) }}
{% endmacro %}

{#- The key of a table in the run memo: its schema and name as the metastore keeps them (lowercase), whichever
    spelling the caller has (the model's `this`, or a relation from dbt's cache). -#}
{% macro _memo_key(relation) %}
    {{ return((relation.schema ~ '.' ~ relation.identifier) | lower) }}
{% endmacro %}

{#- Drops what the run memo holds of a table's properties (table_properties), and marks the table changed in this
    invocation, so that its properties are asked of the catalog from now on, not taken from dbt's listing at the
    start of the invocation. Called by what changes a state table's properties, before it does: the hooks that set
    them (record_write_intent, record_watermark, record_daily_stale_after) and the state_table materialization when
    it builds the table anew. The materialization calls it again, with `if_changed`, after each run of its hooks, so
    that nothing read between a hook's forget and its statement stays in the memo. -#}
{% macro forget_table_properties(relation, if_changed=false) %}
    {%- set key = entity_state._memo_key(relation) -%}
    {%- set changed = entity_state.run_memo('changed_tables') -%}
    {%- if if_changed and key not in changed -%}
        {{ return('') }}
    {%- endif -%}
    {%- do entity_state.run_memo('table_properties').pop(key, none) -%}
    {%- do changed.update({key: true}) -%}
{% endmacro %}
