-- The entries of the messages new to the ledger: this run's verdicts as they are. A message at
-- one position (nearly all) stores no lists: offsets and positions are null, and readers derive
-- them from first_offset. The fast path's messages are never in the ledger (every ledger id goes
-- the general way), so their entries come straight from their joined rows.
SELECT message_id, n_positions[1].topic AS topic, n_positions[1]."partition" AS "partition",
       n_positions[1]."offset" AS first_offset,
       CASE WHEN array_length(n_positions) > 1
            THEN list_sort(list_transform(n_positions, q -> q."offset")) END AS offsets,
       n_sink_count AS sink_count, ${RUN_ID} AS first_run_id, n_verdict AS verdict,
       CASE WHEN array_length(n_positions) > 1 THEN n_positions END AS positions,
       n_record_time_ms AS record_time_ms, n_sink_time_ms AS sink_time_ms,
       n_committed_seen AS committed_seen
FROM ledger_judged n ANTI JOIN ledger o ON n.message_id = o.message_id
UNION ALL
SELECT message_id, topic, "partition", "offset" AS first_offset,
       CAST(NULL AS BIGINT[]) AS offsets,
       CAST(CASE WHEN sink_key IS NOT NULL THEN 1 ELSE 0 END AS BIGINT) AS sink_count,
       ${RUN_ID} AS first_run_id, verdict, ${NO_POSITIONS} AS positions,
       record_time_ms, CAST(NULL AS BIGINT) AS sink_time_ms,
       CAST(NULL AS BOOLEAN) AS committed_seen
FROM fast_final
