{#- One of the project's settings: the var `entity_state__<name>`. Every var of the project is read here, so an
    old, un-namespaced name that is still set (in a dbt_project.yml, a selector or `--vars`) fails the run with the
    name to use instead, rather than being silently ignored. -#}
{% macro setting(name) %}
    {%- do entity_state._refuse_renamed_vars() -%}
    {{ return(var('entity_state__' ~ name)) }}
{% endmacro %}

{% macro _refuse_renamed_vars() %}
    {%- set log_gone = "it is gone: the state is on Delta Lake, merged into entity_state_segments and "
        ~ "entity_state_current once per run, with no log of open stays to compact or bucket" -%}
    {%- set renamed = {
        'entity_state_buckets': log_gone,
        'entity_state__buckets': log_gone,
        'entity_state__compact_after_windows': log_gone,
        'entity_state__log_buckets': log_gone,
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
