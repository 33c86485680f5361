-- The records past the window's end: those read committed up to the last stable offset, and
-- the in-flight ones past it (read uncommitted). Together they are the run's pending input.
SELECT * FROM readable
UNION ALL
SELECT * FROM inflight
