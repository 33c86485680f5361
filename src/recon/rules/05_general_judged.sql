-- The general path's verdicts with the upsert sink's order applied (order declared), as
-- 05_fast_judged does for the fast path: only a lost message changes, and its detail becomes
-- why (the sink row of its key).
SELECT coalesce(o.order_verdict, g.verdict) AS verdict, g.message_id, g.topic, g."partition",
       g.offsets, g.first_offset, g.sink_count, g.sink_keys, g.topic_duplicate,
       coalesce(o.order_detail, g.detail) AS detail,
       g.positions, g.latency_ms, g.record_time_ms, g.sink_time_ms
FROM general_verdicts g
LEFT JOIN order_keys o ON g.verdict = 'lost' AND g.message_id = o.message_id
