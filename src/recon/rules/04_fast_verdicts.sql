-- Decides the fast path's messages from their one joined row: a record and a sink row is
-- `delivered` (`mismatched` when the sink row changed a compared field, else `late` when its
-- latency is over the pipeline's bound), a record alone `lost`; a sink row alone is `phantom`,
-- or `unverifiable` when records of this run's window were removed below the log-start offset,
-- or when the topic is compacted and its read range has offsets without a committed record
-- (compaction_gaps): it may be one of those records. A record alone is `unverifiable` rather
-- than `lost` when the sink is a Kafka topic whose retention removed records this run did not
-- read (target_removed): its copy may have been one of them.
WITH timed AS (
    SELECT *, epoch_ms(sink_time) - epoch_ms(record_time) AS latency_ms FROM fast_joined
)
SELECT
    CASE WHEN "offset" IS NOT NULL AND sink_key IS NOT NULL
              AND coalesce(array_length(differs) > 0, false) THEN 'mismatched'
         WHEN "offset" IS NOT NULL AND sink_key IS NOT NULL
              AND coalesce(latency_ms > ${LATE_AFTER_MS}, false) THEN 'late'
         WHEN "offset" IS NOT NULL AND sink_key IS NOT NULL THEN 'delivered'
         WHEN "offset" IS NOT NULL AND (SELECT count(*) > 0 FROM target_removed)
             THEN 'unverifiable'
         WHEN "offset" IS NOT NULL THEN 'lost'
         WHEN (SELECT count(*) > 0 FROM removed_ranges) THEN 'unverifiable'
         WHEN (SELECT count(*) > 0 FROM compaction_gaps) THEN 'unverifiable'
         ELSE 'phantom' END AS verdict,
    message_id, topic, "partition", "offset", sink_key, latency_ms, differs,
    CAST(NULL AS VARCHAR) AS order_detail, epoch_ms(record_time) AS record_time_ms
FROM timed
