"""What the console and the CLI read: frozen read models and the reads that build them,
the filter as SQL, freshness, the ConsoleBackend protocol."""
