-- Pairs the window's committed records with the run's new sink rows by messageId (one full
-- outer join, no grouping). A message with one record and at most one sink row, or one sink row
-- and no record, is decided from its joined row alone (the fast path, 04_fast_verdicts.sql).
SELECT coalesce(w.message_id, s.message_id) AS message_id, w.topic, w."partition", w."offset",
       s.sink_key
FROM (SELECT message_id, topic, "partition", "offset" FROM checked_records WHERE ok) w
FULL OUTER JOIN (SELECT message_id, sink_key FROM checked_sink_rows WHERE ok) s
ON w.message_id = s.message_id
