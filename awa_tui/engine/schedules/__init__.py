"""A schedule as code declares it: definition and validation, columns, sync, the first hint
of an inserted row, operator overrides, excluded dates."""
