-- The fast path's verdicts with the upsert sink's order applied (order declared): a lost
-- message of a key the sink holds is superseded (delivered) or out_of_order (05_order_keys).
-- record_time_ms stays only on a message still lost: the time a later run measures from.
SELECT coalesce(o.order_verdict, f.verdict) AS verdict, f.message_id, f.topic, f."partition",
       f."offset", f.sink_key, f.latency_ms, f.differs,
       coalesce(o.order_detail, f.order_detail) AS order_detail,
       CASE WHEN o.order_verdict IS NULL AND f.verdict = 'lost' THEN f.record_time_ms END
           AS record_time_ms
FROM fast_verdicts f
LEFT JOIN order_keys o ON f.verdict = 'lost' AND f.message_id = o.message_id
