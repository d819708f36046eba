"""Owner-scoped reconciliation: manifests, agreement, declaration, plans, lifecycle."""
