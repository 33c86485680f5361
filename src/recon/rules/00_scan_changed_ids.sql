-- A sink scanned whole (no ingest sequence) holds every row ever written. A message is judged
-- again only when its row count differs from its ledger entry's (or it has no entry): nothing
-- new can be said of the others.
SELECT c.message_id
FROM (
    SELECT message_id, count(*) AS now FROM sink_all
    WHERE message_id IS NOT NULL
    GROUP BY message_id
) c
LEFT JOIN ledger_all l ON c.message_id = l.message_id
WHERE l.sink_count IS NULL OR c.now <> l.sink_count
