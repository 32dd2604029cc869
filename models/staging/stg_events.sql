{#- The landed rows that can be applied, once each. The state models read the same rows through the same macro,
    filtered to their window before the dedup so that Spark skips the landing files the window cannot hold. -#}
with

final as (
    {{ entity_state.applicable_events() }}
)

select * from final
