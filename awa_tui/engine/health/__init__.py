"""Expectations, health, `awa-tui check` and the metrics (S41-S43): rules.py evaluates and
records health (the leader's duty), check.py answers `awa-tui check`, metrics.py serves
/metrics from what the leader keeps in the database."""
