-- The general path's verdicts with the upsert sink's order applied (order declared), as
-- 05_fast_judged does for the fast path: only a lost message changes, and its detail becomes
-- why (the sink row of its key). The times a later run measures from stay only where it needs
-- them: record_time_ms on a message still lost, sink_time_ms on a pending one.
SELECT coalesce(o.order_verdict, g.verdict) AS verdict, g.message_id, g.topic, g."partition",
       g.offsets, g.first_offset, g.sink_count, g.sink_keys, g.topic_duplicate,
       coalesce(o.order_detail, g.detail) AS detail, g.positions, g.latency_ms,
       CASE WHEN o.order_verdict IS NULL AND g.verdict = 'lost' THEN g.record_time_ms END
           AS record_time_ms,
       CASE WHEN g.verdict = 'pending' THEN g.sink_time_ms END AS sink_time_ms,
       CASE WHEN g.verdict = 'pending' THEN g.committed_seen END AS committed_seen
FROM general_verdicts g
LEFT JOIN order_keys o ON g.verdict = 'lost' AND g.message_id = o.message_id
