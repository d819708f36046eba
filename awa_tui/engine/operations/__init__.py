"""Operator actions and the audit gate they pass, the same actions over a selection, the
least-privilege role layout."""
