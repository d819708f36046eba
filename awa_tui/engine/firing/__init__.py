"""Turning due rows into jobs: the evaluator pass, next-fire hints, the resume preview,
backfill, the array literals of the batch statements."""
