-- The examples a summary and an alert show: the first ${SAMPLE} discrepancy rows per verdict,
-- and of the topic_duplicate flag, in (partition, first offset, messageId) order, nulls first.
WITH picks AS (
    SELECT verdict AS pick, message_id, topic, "partition", offsets, first_offset, sink_keys,
           sink_count, detail
    FROM discrepancies
    UNION ALL
    SELECT 'topic_duplicate' AS pick, message_id, topic, "partition", offsets, first_offset,
           sink_keys, sink_count, detail
    FROM discrepancies
    WHERE topic_duplicate
), ranked AS (
    SELECT *, row_number() OVER (
        PARTITION BY pick
        ORDER BY "partition" NULLS FIRST, first_offset NULLS FIRST, message_id NULLS FIRST
    ) AS rn
    FROM picks
)
SELECT pick, message_id, topic, "partition", offsets, list_slice(sink_keys, 1, 5) AS sink_keys,
       sink_count, detail
FROM ranked
WHERE rn <= ${SAMPLE}
ORDER BY pick, rn
