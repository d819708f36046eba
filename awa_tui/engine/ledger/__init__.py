"""The fire ledger: a verdict for every due instant, job outcomes, retention, audit search.

Read functions return frozen dataclasses (models.py) for the console and the CLI."""
