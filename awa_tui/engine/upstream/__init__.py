"""Upstream mode: operate a database whose awa schema belongs to upstream Awa (awa-pg).

migrations/detect.py tells the schemas apart (and lets the migration runner refuse a foreign
one); adapter.py reads and acts on upstream's own tables; reads.py and actions.py turn that
into the ReadBackend and ActionBackend protocols (awa-tui's own read models), which
backend.py holds for the console and the CLI alike; refusal.py words what upstream lacks;
models.py holds the typed results.
"""
