-- The window's committed messages that no source row in the run's horizon names (input
-- source_rows: every row written up to the snapshot, within the source's horizon_hours).
SELECT c.message_id, min(c."partition") AS "partition", min(c."offset") AS "offset"
FROM checked_records c
ANTI JOIN source_rows s ON c.message_id = s.message_id
WHERE c.ok
GROUP BY c.message_id
