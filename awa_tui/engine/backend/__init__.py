"""What the console and the CLI drive: the protocol a backend implements, and the reads of
awa-tui's own schema."""
