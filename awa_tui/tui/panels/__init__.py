"""The five panels, in the order of the 1-5 keys."""
