"""Named calendars (S56): the table and the cache the evaluator reads, the files their
dates come from, their read models."""
