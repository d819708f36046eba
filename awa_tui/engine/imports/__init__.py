"""Schedules carried over from other schedulers (pg_cron)."""
