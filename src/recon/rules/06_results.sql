-- Every verdict row of the run, in the shape of recon.model.schemas.RESULT: the fast path's messages
-- (their lists built here, as they are read), the general path's, one `invalid` row per record
-- or sink row without a usable messageId (a sink row's id over the length limit is not kept: its
-- sink key says which row it is), and one `unverifiable` row per partition whose window
-- starts below its log-start offset (the removed range: records that cannot be judged); with a
-- source, one `unpublished` row per settled source message no committed record carries
-- (06_source_judged) and one `invalid` row per settled source row without a messageId
-- (06_source_invalid).
-- latency_ms: a judged message's delivery latency, when the run knows both times;
-- record_time_ms: a lost message's record time, for the run that finds its sink row;
-- sink_time_ms: a pending message's first sink row time, for the run that judges it (both kept
-- only there by 05_*_judged); committed_seen: a pending message a run read as a committed
-- record, judged from that read once its record is compacted away. The fast and general paths'
-- verdicts are read as judged (05_*_judged: with an upsert sink's order applied; the verdicts
-- themselves otherwise), then with the records that left on purpose accounted for (05_*_final:
-- `excluded`, `diverted`); one `unverifiable` row per dead-letter record that names no record the
-- run has seen (06_dead_letters_unknown), at the dead-letter record's own position.
-- positions: only for a message at more than one position (the general path's, which may span
-- partitions); null for every other row, whose topic, partition and offsets say where it is
-- (a reader derives them, as recon.rules.run.conform_sql does): one list per message would
-- repeat those columns in every row of the results file.
SELECT verdict, message_id, topic, "partition",
       CASE WHEN "offset" IS NOT NULL THEN ["offset"] ELSE CAST([] AS BIGINT[]) END AS offsets,
       "offset" AS first_offset,
       CAST(CASE WHEN sink_key IS NOT NULL THEN 1 ELSE 0 END AS BIGINT) AS sink_count,
       CASE WHEN sink_key IS NOT NULL THEN [sink_key] ELSE CAST([] AS VARCHAR[]) END AS sink_keys,
       false AS topic_duplicate,
       CASE verdict WHEN 'delivered' THEN order_detail
            WHEN 'out_of_order' THEN order_detail
            WHEN 'excluded' THEN order_detail
            WHEN 'diverted' THEN order_detail
            WHEN 'late' THEN printf(${LATE_DETAIL}, latency_ms, ${LATE_AFTER_MS})
            WHEN 'mismatched' THEN printf(${MISMATCHED_DETAIL}, array_to_string(differs, ', '))
            WHEN 'lost' THEN 'no sink row for a committed record'
            WHEN 'unverifiable' THEN concat_ws('; ',
                CASE WHEN "offset" IS NULL AND (SELECT count(*) > 0 FROM removed_ranges)
                     THEN ${NOT_FOUND_REMOVED} END,
                CASE WHEN "offset" IS NULL THEN (SELECT max(detail) FROM compaction_gaps) END,
                CASE WHEN "offset" IS NOT NULL THEN (SELECT max(detail) FROM target_removed) END)
            ELSE ${PHANTOM} END AS detail,
       ${NO_POSITIONS} AS positions, latency_ms, record_time_ms,
       CAST(NULL AS BIGINT) AS sink_time_ms, CAST(NULL AS BOOLEAN) AS committed_seen
FROM fast_final
UNION ALL
SELECT verdict, message_id, topic, "partition", offsets, first_offset, sink_count, sink_keys,
       topic_duplicate, detail,
       CASE WHEN array_length(positions) > 1 THEN positions END AS positions,
       latency_ms, record_time_ms, sink_time_ms, committed_seen
FROM general_final
UNION ALL
SELECT 'invalid' AS verdict, message_id, topic, "partition", ["offset"] AS offsets,
       "offset" AS first_offset, CAST(0 AS BIGINT) AS sink_count,
       CAST([] AS VARCHAR[]) AS sink_keys, false AS topic_duplicate,
       coalesce(invalid_reason, 'missing message id') AS detail, ${NO_POSITIONS} AS positions,
       ${NO_TIMES}, CAST(NULL AS BOOLEAN) AS committed_seen
FROM checked_records WHERE NOT ok
UNION ALL
SELECT 'invalid' AS verdict,
       CASE WHEN length(message_id) <= ${MAX_MESSAGE_ID_LENGTH} THEN message_id END AS message_id,
       CAST(NULL AS VARCHAR) AS topic,
       CAST(NULL AS INTEGER) AS "partition", CAST([] AS BIGINT[]) AS offsets,
       CAST(NULL AS BIGINT) AS first_offset, CAST(1 AS BIGINT) AS sink_count,
       [sink_key] AS sink_keys, false AS topic_duplicate,
       CASE WHEN length(message_id) > ${MAX_MESSAGE_ID_LENGTH}
            THEN printf(${SINK_ID_OVERSIZE}, ${MAX_MESSAGE_ID_LENGTH})
            ELSE 'sink row without a message id' END AS detail,
       ${NO_POSITIONS} AS positions, ${NO_TIMES}, CAST(NULL AS BOOLEAN) AS committed_seen
FROM checked_sink_rows WHERE NOT ok
UNION ALL
SELECT 'unverifiable' AS verdict, CAST(NULL AS VARCHAR) AS message_id, topic,
       CAST("partition" AS INTEGER) AS "partition", CAST([] AS BIGINT[]) AS offsets,
       CAST(from_offset AS BIGINT) AS first_offset, CAST(0 AS BIGINT) AS sink_count,
       CAST([] AS VARCHAR[]) AS sink_keys, false AS topic_duplicate,
       printf('offsets %d to %d were removed (retention or compaction) before they were read',
              from_offset, log_start_offset - 1) AS detail,
       ${NO_POSITIONS} AS positions, ${NO_TIMES}, CAST(NULL AS BOOLEAN) AS committed_seen
FROM removed_ranges
UNION ALL
SELECT 'unpublished' AS verdict, message_id, CAST(NULL AS VARCHAR) AS topic,
       CAST(NULL AS INTEGER) AS "partition", CAST([] AS BIGINT[]) AS offsets,
       CAST(NULL AS BIGINT) AS first_offset, CAST(0 AS BIGINT) AS sink_count,
       CAST([] AS VARCHAR[]) AS sink_keys, false AS topic_duplicate,
       printf(${UNPUBLISHED_DETAIL}, source_key, n_rows) AS detail,
       ${NO_POSITIONS} AS positions, ${NO_TIMES}, CAST(NULL AS BOOLEAN) AS committed_seen
FROM source_judged
UNION ALL
SELECT 'invalid' AS verdict, message_id, CAST(NULL AS VARCHAR) AS topic,
       CAST(NULL AS INTEGER) AS "partition", CAST([] AS BIGINT[]) AS offsets,
       CAST(NULL AS BIGINT) AS first_offset, CAST(0 AS BIGINT) AS sink_count,
       CAST([] AS VARCHAR[]) AS sink_keys, false AS topic_duplicate,
       printf(${SOURCE_WITHOUT_ID}, coalesce(source_key, '(unnamed)')) AS detail,
       ${NO_POSITIONS} AS positions, ${NO_TIMES}, CAST(NULL AS BOOLEAN) AS committed_seen
FROM source_invalid
UNION ALL
SELECT 'unverifiable' AS verdict, message_id, dl_topic AS topic,
       CAST(dl_partition AS INTEGER) AS "partition", [CAST(dl_offset AS BIGINT)] AS offsets,
       CAST(dl_offset AS BIGINT) AS first_offset, CAST(0 AS BIGINT) AS sink_count,
       CAST([] AS VARCHAR[]) AS sink_keys, false AS topic_duplicate,
       concat(${DEAD_LETTER_UNKNOWN},
              CASE WHEN orig_topic IS NOT NULL THEN concat(' (original ', orig_topic, '/',
                   coalesce(CAST(orig_partition AS VARCHAR), '?'), '@',
                   coalesce(CAST(orig_offset AS VARCHAR), '?'), ')') ELSE '' END,
              CASE WHEN error IS NOT NULL THEN concat(': ', left(error, 200)) ELSE '' END)
           AS detail,
       ${NO_POSITIONS} AS positions, ${NO_TIMES}, CAST(NULL AS BOOLEAN) AS committed_seen
FROM dead_letters_unknown
