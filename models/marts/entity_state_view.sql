{#- Every stay of every entity: the closed stays segments holds that the current row has caught up with, and the
    open one (macro timeline_stays, shared with entity_state_daily_counted). -#}
{{ entity_state.timeline_stays() }}
