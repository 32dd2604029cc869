{#- Whether the stay `stay` (an alias with closed_ingested_at, repaired_through_ingested_at and emitted_window) was
    written before the repair `repair` (an alias with repair_through_ingested_at and repair_window) of its entity.
    A stay closed in order was, when the repair walked the event that closed it; a stay written by a repair was,
    when that repair walked to an earlier arrival, or to the same one in an earlier write (a rerun). Used with the
    repair's reach (the stay starts at or after the repair's first stay) to tell which stays a repair replaces. -#}
{% macro written_before_repair(stay, repair) %}
    (
        (
            {{ stay }}.repaired_through_ingested_at is null
            and {{ stay }}.closed_ingested_at <= {{ repair }}.repair_through_ingested_at
        )
        or {{ stay }}.repaired_through_ingested_at < {{ repair }}.repair_through_ingested_at
        or (
            {{ stay }}.repaired_through_ingested_at = {{ repair }}.repair_through_ingested_at
            and {{ stay }}.emitted_window < {{ repair }}.repair_window
        )
    )
{% endmacro %}
