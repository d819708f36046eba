-- Undoes v027_retention_progress.sql: the progress row goes (a release before it keeps its
-- cursor in memory only, as before).
DROP TABLE awa.retention_progress;
