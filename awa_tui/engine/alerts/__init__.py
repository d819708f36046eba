"""Alerts that reach a person (S63): sinks, the delivery outbox, silences, payloads."""
