{#- On-run-start hook: ENTITY_STATE_DRIVER_KEPT_ALIVE, which the `local` profile reads to start the in-process Spark
    driver for one invocation (false, the default) or for many (true), must say one of the two. The profile cannot
    stop a run, and it reads any other word as false: without this check a mistyped `ture` would pass unseen. Renders
    no SQL. -#}
{% macro check_driver_kept_alive() %}
    {%- set value = env_var('ENTITY_STATE_DRIVER_KEPT_ALIVE', 'false') -%}
    {%- if value | lower not in ('true', 'false') -%}
        {{ exceptions.raise_compiler_error(
            "ENTITY_STATE_DRIVER_KEPT_ALIVE must be true (a process that keeps its Spark driver for many dbt runs) "
            ~ "or false (one invocation, the default), got '" ~ value ~ "'"
        ) }}
    {%- endif -%}
{% endmacro %}
