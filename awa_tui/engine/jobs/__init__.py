"""The job runner: a job's typed context, handlers and their policies, the claim and the
outcomes in the database, the executor (an event loop for async handlers, threads for sync
ones), the slots of a worker, and enqueueing."""
