-- Where the next run reads each dead-letter partition from, when a record there names a message
-- still pending in this run (a recoverer publishes before the group commits past the original):
-- the first such record's offset, so that the run whose window reaches the original reads it
-- again and finds the message diverted. Partitions without one go on from this run's end.
SELECT d.dl_topic, d.dl_partition, min(d.dl_offset) AS dl_offset
FROM dead_lettered d
WHERE d.message_id IN (SELECT message_id FROM pending WHERE message_id IS NOT NULL)
  AND d.message_id NOT IN (SELECT message_id FROM records WHERE message_id IS NOT NULL)
GROUP BY d.dl_topic, d.dl_partition
