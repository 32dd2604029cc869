{#- A state model's write plan: what the model decided while it compiled, for the state_table materialization and
    the post-hook to act on after it. It is the only thing that travels from a model to its materialization through
    the compiled SQL, as one comment holding JSON; this file writes it and reads it back, nothing else does.
    Keys (each may be left out):
    - `watermark`: the watermark (epoch microseconds) the model's rows are computed for; record_watermark sets it
      after the write, so it is exactly the one the write used even if new files land in between. Left out when it
      equals `recorded_watermark`, the one the table already holds (an empty window): setting it again would be a
      metastore write with nothing to say.
    - `partition`: the partition a model written with `insert_new_partition` adds (see insert_new_partition_sql).
    - `rebuild`: why the table is built aside and swapped in, as a full refresh does, instead of written to.
    - `is_window_empty`: true when the model's window holds nothing new; the materialization then writes nothing
      (no statement, no empty partition) and only the post-hooks run.
    - `writes_no_rows`: true when the window holds something new but no row of this table (the quarantine's window
      without a row to keep); the materialization then writes nothing either, but for a table with
      on_schema_change 'fail' and an enforced contract still holds its columns to the model's
      (fail_on_state_schema_change), so a changed model fails at the first run after the change.
    - `followed_build`: for a table that follows another's writes, the build of that table its rows start from
      (table_created_at), recorded by record_watermark; given when the table is built.
    - `first_window`: for a table written one partition per window, when it is built: the window's end, recorded by
      record_watermark (first_window_property); every later write's window ends at or after it.
    - `repair_history`: for a table that holds its own closed stays, the bound of its window's repair read with that
      window (low, high, seed), recorded by record_watermark for state_window to reuse.
    - `walked_window`: for a table that holds its own closed stays, when its partition holds every closed stay of
      its window's walk: that window (low, high, seed) and the partition, recorded by record_watermark
      (walked_window_property) for a table of the same window to read its open stays from.
    - `compacts`: for a `compacted_log` (state_window), true when the write holds every entity's row: the partitions
      before it are dropped once its watermark is recorded (drop_partitions_before_compaction).
    - `logged_windows`: for a `compacted_log` that the run writes, how many windows written since its build or its
      last compaction it holds once written, recorded by record_watermark (logged_windows_property). -#}
{% macro write_plan(
    watermark=none, partition=none, rebuild=none, is_window_empty=false, recorded_watermark=none, followed_build=none,
    repair_history=none, first_window=none, walked_window=none, writes_no_rows=false, compacts=false,
    logged_windows=none
) %}
    {%- set plan = {} -%}
    {%- set is_recorded = watermark is not none and recorded_watermark is not none
        and watermark | int == recorded_watermark | int and rebuild is none -%}
    {%- if watermark is not none and not is_recorded -%}{%- do plan.update({'watermark': watermark | int}) -%}{%- endif -%}
    {%- if partition is not none -%}{%- do plan.update({'partition': partition}) -%}{%- endif -%}
    {%- if rebuild is not none -%}{%- do plan.update({'rebuild': rebuild}) -%}{%- endif -%}
    {%- if is_window_empty -%}{%- do plan.update({'is_window_empty': true}) -%}{%- endif -%}
    {%- if writes_no_rows -%}{%- do plan.update({'writes_no_rows': true}) -%}{%- endif -%}
    {%- if followed_build is not none -%}{%- do plan.update({'followed_build': followed_build}) -%}{%- endif -%}
    {%- if first_window is not none -%}{%- do plan.update({'first_window': first_window | int}) -%}{%- endif -%}
    {%- if repair_history is not none -%}{%- do plan.update({'repair_history': repair_history}) -%}{%- endif -%}
    {%- if walked_window is not none -%}{%- do plan.update({'walked_window': walked_window}) -%}{%- endif -%}
    {%- if compacts -%}{%- do plan.update({'compacts': true}) -%}{%- endif -%}
    {%- if logged_windows is not none -%}{%- do plan.update({'logged_windows': logged_windows | int}) -%}{%- endif -%}
    {%- set text = tojson(plan, sort_keys=true) -%}
    {%- if '*/' in text -%}
        {{ exceptions.raise_compiler_error(
            "write_plan: the plan of " ~ this ~ " contains '*/', which would end its SQL comment: " ~ text
        ) }}
    {%- endif -%}
    /* entity_state.write_plan={{ text }} */
{% endmacro %}

{#- The write plan in a model's compiled SQL, as a dict (empty when the model renders none). -#}
{% macro read_write_plan(compiled_code) %}
    {%- set found = modules.re.search('/\\* entity_state\\.write_plan=(\\{.*?\\}) \\*/', compiled_code or '') -%}
    {{ return(fromjson(found.group(1)) if found else {}) }}
{% endmacro %}
