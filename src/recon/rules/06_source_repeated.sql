-- The messageIds that more than one settled source row names (an outbox with two rows for one
-- id, a producer's retry upstream), with how many rows: counted and judged once. Found by a
-- 64-bit hash of the id, cheaper to group than text, and counted exactly for those hashes only
-- (a collision only counts a message that turns out to be named once, and drops it).
SELECT message_id, count(*) AS n_rows
FROM source_ids
WHERE hash(message_id) IN (
    SELECT hash(message_id) FROM source_ids GROUP BY hash(message_id) HAVING count(*) > 1
)
GROUP BY message_id
HAVING count(*) > 1
