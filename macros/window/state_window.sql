{#- A state table's window: what one run of the model reads and writes, decided once while it compiles, from what the
    model declares in its yml under `config.meta.state_window` (see _declared_window for the keys). Returns a dict:
    - `seed`: the state table whose stored open stays seed the walk, or none (first build, full refresh, a rebuild
      that follows a table built anew, the seed table not built yet, or no seed declared);
    - `seed_rows`: with a seed, its open stays as the walk reads them, one row per entity (SQL to select from): each
      entity's newest row written for a window that ended at or before `low` (newest_logged_rows);
    - `low`: where the events the run reads start, exclusive (epoch microseconds, none = from the first): the seed's
      watermark, or `start` for a table without a seed;
    - `start`: what the table holds already: for a table written one partition per window, how far it has emitted
      (its recorded watermark, or its rows' if a run stopped before recording); otherwise its recorded watermark;
    - `high`: where the window ends, inclusive: the least of what it may not pass; none while it must wait;
    - `repair_history`: for a table that declares its closed stays, how far back a repair of the window's late
      events reads the landed history (repair_history_bound, or what the closed stays' table recorded for the same
      window and seed; none: all of it), for repair_history_predicate;
    - `walked_partition`: for a table whose closed stays another table holds, the partition where that table wrote
      the whole walk of this same window and seed, or none (_recorded_walked_partition);
    - `plan`: the arguments of write_plan: the watermark to record (the window's end, never below `start`), the
      partition to add (tables written one partition per window) and, when such a table is built, its window's end
      as the first one, why the table is rebuilt, if it is, whether the window holds nothing new, and for a
      `compacted_log`, whether the write holds every entity's row (a compaction) and how many windows written since
      the last such write the table then holds. -#}
{% macro state_window() %}
    {%- set window = {
        'seed': none, 'seed_rows': none, 'low': none, 'start': none, 'high': none, 'repair_history': none,
        'walked_partition': none, 'plan': {},
    } -%}
    {#- parsing: a model's yml is applied after its SQL is parsed, so its declaration is not there yet -#}
    {%- if not execute -%}
        {{ return(window) }}
    {%- endif -%}
    {%- set declared = entity_state._declared_window(model) -%}
    {%- do entity_state._assert_bounds_are_dependencies(declared) -%}
    {#- read on every run, so a wrong value stops the first run rather than the one that would compact -#}
    {%- set compact_after_windows = entity_state.positive_integer_setting(
        'compact_after_windows', 'how many windows entity_state_current_log holds before a run compacts it'
    ) if declared.compacted_log else none -%}
    {%- set is_stored = entity_state.has_stored_state() -%}
    {%- set properties = entity_state.table_properties(this) if is_stored else {} -%}
    {%- set recorded = entity_state._recorded_watermark(properties) -%}
    {%- set rebuild = none -%}

    {#- a table that follows another's writes starts again when that table was built anew: the writes it followed
        are gone -#}
    {%- set followed_build = entity_state.table_created_at(entity_state.state_relation(declared.follows))
        if declared.follows is not none else none -%}
    {%- if is_stored and followed_build is not none
        and properties.get(entity_state.followed_build_property()) != followed_build -%}
        {%- set rebuild = declared.follows ~ ' was built anew' -%}
        {%- do log(
            this ~ ': ' ~ declared.follows ~ ' was built anew since this table last followed its writes; rebuilding '
            ~ 'the table from its current writes', info=true
        ) -%}
    {%- endif -%}

    {%- if is_stored and declared.seed is not none -%}
        {%- set seed = this if declared.seed == 'this' else entity_state.state_relation(declared.seed) -%}
        {%- set seed_properties = properties if declared.seed == 'this'
            else entity_state.table_properties(seed) -%}
        {%- do window.update({'seed': seed}) -%}
    {%- endif -%}

    {%- if rebuild is none and is_stored -%}
        {%- do window.update({'start': entity_state.emitted_watermark(this, declared.emitted_column, properties)
            if declared.emitted_column else recorded}) -%}
    {%- endif -%}
    {%- if declared.seed is none -%}
        {%- do window.update({'low': window.start}) -%}
    {%- elif window.seed is not none -%}
        {%- do window.update({'low': entity_state._recorded_watermark(seed_properties)}) -%}
        {%- do window.update({'seed_rows': entity_state.newest_logged_rows(window.seed, through=window.low)}) -%}
    {%- endif -%}

    {#- the end: the least of the bounds; a bound not there yet (nothing landed, a table not built or not written)
        makes the window wait, except a table declared `once_built` while it does not exist -#}
    {%- set bounds = [] -%}
    {%- for bound in declared.may_not_pass -%}
        {%- if bound.table == 'landing' -%}
            {%- set landed_through = entity_state.landing_high_watermark(files_since=window.low) -%}
            {%- do entity_state.assert_landing_files_complete(window.low, landed_through) -%}
            {%- do bounds.append(landed_through) -%}
        {%- else -%}
            {%- set relation = entity_state.state_relation(bound.table) -%}
            {%- if relation is not none or not bound.once_built -%}
                {%- set emitted_column = entity_state._declared_window(
                    entity_state._state_node(bound.table)).emitted_column -%}
                {%- set bound_properties = entity_state.table_properties(relation) -%}
                {%- do bounds.append(entity_state.emitted_watermark(relation, emitted_column, bound_properties)
                    if emitted_column else entity_state._recorded_watermark(bound_properties)) -%}
            {%- endif -%}
        {%- endif -%}
    {%- endfor -%}
    {%- do window.update({'high': none if not bounds or none in bounds else bounds | min}) -%}
    {%- set is_window_empty = is_stored and rebuild is none
        and entity_state.is_window_empty(window.start, window.high) -%}

    {#- a log of rows per entity (`compacted_log`) gets every entity's newest row in the window's partition once it
        holds entity_state__compact_after_windows windows written since its last such write: its readers take each
        entity's newest row, which costs more with every window it holds, and the older partitions can go
        (drop_partitions_before_compaction) -#}
    {%- set logged_windows = properties.get(entity_state.logged_windows_property()) -%}
    {%- set compacts = declared.compacted_log and is_stored and rebuild is none and not is_window_empty
        and window.seed is not none and logged_windows is not none
        and logged_windows | int >= compact_after_windows -%}

    {%- set known = [window.start, window.high] | reject('none') | list -%}
    {%- set watermark = known | max if known else none -%}
    {%- set partition = entity_state.window_partition_value(watermark) if declared.emitted_column else none -%}

    {#- a repair's read: the bound the closed stays' table found for the same window and seed, or found here. A table
        whose closed stays another table holds also takes the partition where that table wrote the same window's
        walk whole, if it did, to read its open stays from (walked_partition): after a seeded walk, or after a walk
        of every landed event (a first build, a full refresh) -#}
    {%- set repair_history_record = none -%}
    {%- set walked_window_record = none -%}
    {%- if declared.closed_stays is not none -%}
        {%- set closed_stays = this if declared.closed_stays == 'this'
            else entity_state.state_relation(declared.closed_stays) -%}
        {%- set closed_stays_properties = {} if declared.closed_stays == 'this'
            else entity_state.table_properties(closed_stays) -%}
        {%- do window.update({
            'walked_partition': entity_state._recorded_walked_partition(closed_stays_properties, window),
        }) -%}
        {%- if window.seed is not none -%}
            {%- set reused = entity_state._recorded_repair_history(closed_stays_properties, window) -%}
            {%- do window.update({
                'repair_history': reused if reused is not none
                    else entity_state.repair_history_bound(window, closed_stays),
            }) -%}
        {%- endif -%}
        {%- if declared.closed_stays == 'this' and window.repair_history is not none -%}
            {%- set repair_history_record = {'low': window.low, 'high': window.high, 'seed': window.seed | string} -%}
            {%- do repair_history_record.update(window.repair_history) -%}
        {%- endif -%}
        {#- the write holds the walk whole when it emits every stay the walk closed: from the seed's watermark on, or
            from the first landed event when nothing seeds it; a waiting window (no high) walks nothing -#}
        {%- if declared.closed_stays == 'this' and window.start == window.low and window.high is not none
            and partition is not none and (window.repair_history is not none or window.seed is none) -%}
            {%- set walked_window_record = {
                'low': window.low, 'high': window.high, 'seed': window.seed | string, 'partition': partition,
            } -%}
        {%- endif -%}
    {%- endif -%}

    {%- set is_built = not is_stored or rebuild is not none -%}
    {%- do window.update({'plan': {
        'watermark': watermark,
        'partition': partition,
        'rebuild': rebuild,
        'is_window_empty': is_window_empty,
        'recorded_watermark': recorded,
        'followed_build': followed_build if is_built else none,
        'repair_history': repair_history_record,
        'walked_window': walked_window_record,
        'first_window': watermark if declared.emitted_column and is_built else none,
        'compacts': compacts,
        'logged_windows': none if not declared.compacted_log or is_window_empty
            else 1 if is_built or compacts else (logged_windows or 0) | int + 1,
    }}) -%}
    {{ return(window) }}
{% endmacro %}

{#- The bound of a repair's read that a table (its `properties`, table_properties) recorded for the same window and
    seed as `window`, or none. It is what repair_history_bound would find here: it depends on the window's landed
    rows, the seed's rows and the closed stays as of each seed row's watermark, and a write of the closed stays'
    table adds only stays past it. -#}
{% macro _recorded_repair_history(properties, window) %}
    {%- set record = entity_state._record_for_window(properties, entity_state.repair_history_property(), window) -%}
    {%- if record is none -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return({
        'has_possible_late_events': record.get('has_possible_late_events', true),
        'has_stored_repairs': record.has_stored_repairs,
        'event_time_from': record.event_time_from,
    }) }}
{% endmacro %}

{#- The partition where a table (its `properties`, table_properties) wrote the whole walk of the same window and
    seed as `window` (walked_window_property), or none. The walk depends only on the window's landed rows and the
    seed's rows, so that partition holds every stay a walk here would close: the same seed, unchanged since (its
    watermark is the window's low; a write of it that stopped midway left rows the walk gives again), or no seed on
    both sides (a walk of every event landed up to the same high). -#}
{% macro _recorded_walked_partition(properties, window) %}
    {%- set record = entity_state._record_for_window(properties, entity_state.walked_window_property(), window) -%}
    {{ return(record.get('partition') if record is not none else none) }}
{% endmacro %}

{#- The JSON record a table keeps in its property `property` (record_watermark) about its last window, as a dict, when
    it is about the same window (low, high) and seed as `window`; else none. Records are made only for windows that
    hold something, so a waiting window (no high) matches none. -#}
{% macro _record_for_window(properties, property, window) %}
    {%- set recorded = properties.get(property) -%}
    {%- set record = fromjson(recorded) if recorded is not none else none -%}
    {%- if record is mapping and record.get('low') == window.low and record.get('high') == window.high
        and record.get('seed') == window.seed | string -%}
        {{ return(record) }}
    {%- endif -%}
    {{ return(none) }}
{% endmacro %}

{#- What a state model declares about its window, from `config.meta.state_window` in its yml, with defaults:
    - `seed`: the state table whose stored open stays seed its walk (`this` for the table's own rows), or none;
    - `may_not_pass`: the watermarks its window ends at (the least of them): `landing` (the newest landed arrival)
      or a state table (how far it has emitted); each as a name, or as `{table: name, once_built: true}` for a table
      that holds the window back only once it exists;
    - `emitted_column`: for a table written one partition per window, its column holding the arrival each row was
      emitted for, or none;
    - `follows`: for a table that turns another state table's writes (its partitions) into rows of its own, that
      table: when it is built anew (a full refresh), the writes followed so far are gone, so this table is rebuilt
      from the new ones;
    - `closed_stays`: for a table whose walk repairs late events, the state table holding the closed stays (`this`
      for its own), whose standing stays bound how far back a repair reads (repair_history_bound);
    - `compacted_log`: true for a table written one partition per window that holds each entity's rows as of the
      windows that touched it, whose readers take each entity's newest row (newest_logged_rows): once it holds
      `entity_state__compact_after_windows` windows written since its build or its last compaction, a run writes
      every entity's row into its partition, and the older partitions are dropped. -#}
{% macro _declared_window(node) %}
    {%- set declared = (node.config.meta or {}).get('state_window') -%}
    {%- if declared is not mapping -%}
        {{ exceptions.raise_compiler_error(
            "state_window: model " ~ node.name ~ " declares no window. Add config.meta.state_window to its yml, "
            ~ "with may_not_pass (and seed, emitted_column where they apply): see macros/window/state_window.sql"
        ) }}
    {%- endif -%}
    {%- set known = ['seed', 'may_not_pass', 'emitted_column', 'follows', 'closed_stays', 'compacted_log'] -%}
    {%- set unknown = declared.keys() | reject('in', known) | list -%}
    {%- if unknown or not declared.get('may_not_pass') -%}
        {{ exceptions.raise_compiler_error(
            "state_window: the window of model " ~ node.name ~ " needs may_not_pass (a list) and takes only "
            ~ known | join(', ') ~ "; got " ~ (declared.keys() | list | join(', '))
        ) }}
    {%- endif -%}
    {%- if declared.get('compacted_log') and (declared.get('seed') is none or not declared.get('emitted_column')) -%}
        {{ exceptions.raise_compiler_error(
            "state_window: model " ~ node.name ~ " declares compacted_log, which needs a seed (its newest rows seed "
            ~ "the walk that a compaction writes from) and an emitted_column (it is written one partition per window)"
        ) }}
    {%- endif -%}
    {%- set bounds = [] -%}
    {%- for bound in declared.may_not_pass -%}
        {%- do bounds.append(
            bound if bound is mapping and bound.get('once_built') in [true, false] and bound.get('table') is string
            else {'table': bound, 'once_built': false} if bound is string
            else exceptions.raise_compiler_error(
                "state_window: each may_not_pass entry of model " ~ node.name ~ " is a table name, 'landing', or "
                ~ "{table: name, once_built: true}; got " ~ bound
            )
        ) -%}
    {%- endfor -%}
    {{ return({
        'seed': declared.get('seed'),
        'may_not_pass': bounds,
        'emitted_column': declared.get('emitted_column'),
        'follows': declared.get('follows'),
        'closed_stays': declared.get('closed_stays'),
        'compacted_log': declared.get('compacted_log', false),
    }) }}
{% endmacro %}

{#- A table the window may not pass, follows, or reads closed stays from is read before this model writes: it must
    run first, so it is a dependency (a `ref`, or a `-- depends_on:` comment when the model reads it without one).
    The seed is not: the seed table is written after the tables it seeds, from what they emitted. -#}
{% macro _assert_bounds_are_dependencies(declared) %}
    {%- set tables = declared.may_not_pass | map(attribute='table') | reject('equalto', 'landing') | list
        + ([declared.follows] if declared.follows is not none else [])
        + ([declared.closed_stays] if declared.closed_stays not in [none, 'this'] else []) -%}
    {%- for table in tables -%}
        {%- if entity_state._state_node(table).unique_id not in model.depends_on.nodes -%}
            {{ exceptions.raise_compiler_error(
                "state_window: the window of model " ~ model.name ~ " depends on " ~ table ~ ", so the model must run "
                ~ "after it: add -- depends_on: {{ ref('" ~ table ~ "') }} to " ~ model.original_file_path
            ) }}
        {%- endif -%}
    {%- endfor -%}
{% endmacro %}
