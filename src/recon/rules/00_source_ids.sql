-- The source's messages that settled in this run (input source_rows, column `judge`: each
-- source row is judged by exactly one run, the one in whose settle interval it was written),
-- one row per messageId: an outbox naming an id twice is counted (n_rows) and judged once.
SELECT message_id, coalesce(min(source_key), message_id) AS source_key, count(*) AS n_rows
FROM source_rows
WHERE judge AND message_id IS NOT NULL AND trim(message_id) <> ''
GROUP BY message_id
