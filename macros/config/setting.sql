{#- One of the project's settings: the var `entity_state__<name>`. Every var of the project is read here, so an
    old, un-namespaced name that is still set (in a dbt_project.yml, a selector or `--vars`) fails the run with the
    name to use instead, rather than being silently ignored. -#}
{% macro setting(name) %}
    {%- do entity_state._refuse_renamed_vars() -%}
    {{ return(var('entity_state__' ~ name)) }}
{% endmacro %}

{#- A setting that must be a positive integer: its value, or the compile stops with the var's name and `meaning`
    (what the number counts). -#}
{% macro positive_integer_setting(name, meaning) %}
    {%- set value = entity_state.setting(name) -%}
    {%- if value is not number or value is boolean or value | int != value or value < 1 -%}
        {{ exceptions.raise_compiler_error(
            "var entity_state__" ~ name ~ " must be a positive integer (" ~ meaning ~ "), got " ~ value
        ) }}
    {%- endif -%}
    {{ return(value | int) }}
{% endmacro %}

{% macro _refuse_renamed_vars() %}
    {%- set buckets_gone = "it is gone: entity_state_current is a view over entity_state_current_log, which each "
        ~ "run appends to and entity_state__compact_after_windows compacts; the log's own buckets by entity, which "
        ~ "make its reads cheaper, are entity_state__log_buckets" -%}
    {%- set renamed = {
        'entity_state_buckets': buckets_gone,
        'entity_state__buckets': buckets_gone,
        'landing_clock_skew_minutes': "it is now 'entity_state__landing_clock_skew_minutes'",
        'entity_state_audit_recompute': "it is gone: the audit test always exists; run it with "
            ~ "`dbt build --selector audit` and leave it out with `--selector scheduled`",
    } -%}
    {%- for old_name, instead in renamed.items() if var(old_name, none) is not none -%}
        {{ exceptions.raise_compiler_error(
            "The var '" ~ old_name ~ "' is set, but " ~ instead ~ ". Rename or remove it (dbt_project.yml, --vars)."
        ) }}
    {%- endfor -%}
{% endmacro %}
