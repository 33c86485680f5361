-- The fast path's verdicts with the upsert sink's order applied (order declared): a lost
-- message of a key the sink holds is superseded (delivered) or out_of_order (05_order_keys).
SELECT coalesce(o.order_verdict, f.verdict) AS verdict, f.message_id, f.topic, f."partition",
       f."offset", f.sink_key, f.latency_ms, f.differs,
       coalesce(o.order_detail, f.order_detail) AS order_detail, f.record_time_ms
FROM fast_verdicts f
LEFT JOIN order_keys o ON f.verdict = 'lost' AND f.message_id = o.message_id
