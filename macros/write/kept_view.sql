{#- The materialization of this project's views (`materialized='kept_view'`): dbt's view materialization, except that
    a view whose definition has not changed since it was created is kept as it is. Recreating a view makes Spark
    analyse its whole query (0.15 to 0.7 s per view here, about two seconds a run for the project's seven), and a
    scheduled run would pay that every time for views that never change. The definition is a digest of what shapes
    the view (compiled SQL, config, contract and documented columns, description), stored as a property of the view
    when it is created and read back from the relation dbt already listed at the start of the run, so keeping a
    view costs no statement. A view is recreated when that digest differs or is missing, when it is not a view,
    and on --full-refresh. Under `--empty`, where dbt puts an empty query in place of each ref and source, an
    existing view is checked instead, by planning its query on no rows and holding it to an enforced contract,
    and kept (its hooks run, as for a view kept unchanged): recreated from those empty queries it would show no rows
    until the next run. Users' own views keep dbt's materialization. -#}
{% materialization kept_view, adapter='spark', supported_languages=['sql'] -%}
  {%- set definition = entity_state._view_definition_digest() -%}
  {%- set existing = load_cached_relation(this) -%}
  {%- if flags.EMPTY and existing is not none and existing.is_view -%}
    {{ run_hooks(pre_hooks) }}
    {%- do entity_state._check_query_without_rows() -%}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this.incorporate(type='view')]}) }}
  {%- endif -%}
  {%- if definition is not none and existing is not none and existing.is_view and not should_full_refresh()
      and entity_state._stored_view_definition(existing) == definition -%}
    {{ run_hooks(pre_hooks) }}
    {% do store_raw_result('main', message='SKIP (definition unchanged)', code='SKIP', rows_affected=0) %}
    {{ run_hooks(post_hooks) }}
    {{ return({'relations': [this.incorporate(type='view')]}) }}
  {%- endif -%}
  {%- set result = create_or_replace_view() -%}
  {%- if definition is not none -%}
    {%- call statement('record_view_definition') -%}
      alter view {{ this }} set tblproperties ('{{ entity_state._view_definition_property() }}' = '{{ definition }}')
    {%- endcall -%}
  {%- endif -%}
  {{ return(result) }}
{%- endmaterialization %}

{% macro _view_definition_property() %}
    {{ return('entity_state.view_definition_md5') }}
{% endmacro %}

{#- md5 of what shapes the view, or none when it cannot be serialised (the view is then always recreated). -#}
{% macro _view_definition_digest() %}
    {%- set shape = tojson({
        'sql': compiled_code,
        'config': model.config,
        'columns': model.columns,
        'description': model.description,
    }, sort_keys=true) -%}
    {{ return(local_md5(shape) if shape else none) }}
{% endmacro %}

{#- The digest stored on a listed view, from the table properties in the listing (`show table extended`), or none. -#}
{% macro _stored_view_definition(relation) %}
    {%- set properties = entity_state._table_properties_in_listing(relation.information) or {} -%}
    {{ return(properties.get(entity_state._view_definition_property())) }}
{% endmacro %}
