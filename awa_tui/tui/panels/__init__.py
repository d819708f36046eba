"""The six panels, in the order of the 1-6 keys."""
