-- The sink rows a whole-table scan passes to the rules: every row of a message whose count
-- changed (they are all passed again, and its entry's count is zeroed), and every row without
-- a messageId (each is judged on its own).
SELECT s.sink_key, s.message_id, s.sink_time, s.payload
FROM sink_all s JOIN scan_changed_ids c ON s.message_id = c.message_id
UNION ALL
SELECT sink_key, message_id, sink_time, payload FROM sink_all WHERE message_id IS NULL
