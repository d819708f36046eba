"""Upstream mode: operate a database whose awa schema belongs to upstream Awa (awa-pg).

detect.py tells the schemas apart (and lets the migration runner refuse a foreign one),
adapter.py reads and acts on upstream's own tables, models.py holds the typed results.
"""
