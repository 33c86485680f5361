-- The examples a summary and an alert show of the unsourced messages: the first ${SAMPLE}, in
-- (partition, offset) order, with where they sit in the topic.
SELECT message_id, "partition", "offset"
FROM source_unsourced
ORDER BY "partition", "offset", message_id
LIMIT ${SAMPLE}
