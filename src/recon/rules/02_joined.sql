-- Pairs the window's committed records with the run's new sink rows by messageId (one full
-- outer join, no grouping). A message with one record and at most one sink row, or one sink row
-- and no record, is decided from its joined row alone (the fast path, 04_fast_verdicts.sql).
-- The record's Kafka timestamp and the sink row's time ride along (null unless the pipeline
-- declares sink.time_column): a delivery's latency is the one minus the other. Each pair's
-- payload digests are compared here, where they meet (${PAYLOAD_DIFF}: the fields the sink row
-- changed, null unless the pipeline declares payload), and only the differing names are kept.
SELECT coalesce(w.message_id, s.message_id) AS message_id, w.topic, w."partition", w."offset",
       s.sink_key, w.record_time, s.sink_time, ${PAYLOAD_DIFF} AS differs
FROM (SELECT message_id, topic, "partition", "offset", "timestamp" AS record_time,
             payload_digests AS record_digests
      FROM checked_records WHERE ok) w
FULL OUTER JOIN (SELECT message_id, sink_key, sink_time, payload_digests AS sink_digests
                 FROM checked_sink_rows WHERE ok) s
ON w.message_id = s.message_id
