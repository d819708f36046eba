"""Cron expressions: parsing, field search, fire arithmetic, DST rules, descriptions."""
