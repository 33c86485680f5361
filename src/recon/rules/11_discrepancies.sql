-- The result rows the results database keeps: every verdict but a plain delivery, every row
-- flagged topic_duplicate, and late deliveries (they correct an earlier run's lost).
SELECT verdict, message_id, topic, "partition", offsets, first_offset, sink_keys, sink_count,
       topic_duplicate, detail
FROM results
WHERE verdict <> 'delivered' OR topic_duplicate
   OR coalesce(starts_with(detail, ${LATE_DELIVERY}), false)
