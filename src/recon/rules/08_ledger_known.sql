-- The next entries of the messages the ledger knew. An entry changes when this run judged its
-- message, except that a message judged before and seen pending again (a record re-read past
-- the window's end) keeps its judged entry; first_run_id never changes.
WITH pairs AS (
    SELECT o.*, n.n_verdict, n.n_sink_count, n.n_positions, n.n_record_time_ms,
           n.n_sink_time_ms, n.n_committed_seen,
           (n.n_verdict IS NULL OR (n.n_verdict = 'pending' AND o.verdict IN ${JUDGED}))
               AS keep_old
    FROM ledger o LEFT JOIN ledger_judged n ON o.message_id = n.message_id
)
SELECT message_id,
       CASE WHEN keep_old THEN topic ELSE n_positions[1].topic END AS topic,
       CASE WHEN keep_old THEN "partition" ELSE n_positions[1]."partition" END AS "partition",
       CASE WHEN keep_old THEN first_offset ELSE n_positions[1]."offset" END AS first_offset,
       CASE WHEN keep_old THEN offsets
            ELSE list_sort(list_transform(n_positions, q -> q."offset")) END AS offsets,
       CASE WHEN keep_old THEN sink_count ELSE n_sink_count END AS sink_count,
       coalesce(first_run_id, ${RUN_ID}) AS first_run_id,
       CASE WHEN keep_old THEN verdict ELSE n_verdict END AS verdict,
       CASE WHEN keep_old THEN positions ELSE n_positions END AS positions,
       CASE WHEN keep_old THEN record_time_ms ELSE n_record_time_ms END AS record_time_ms,
       CASE WHEN keep_old THEN sink_time_ms ELSE n_sink_time_ms END AS sink_time_ms,
       CASE WHEN keep_old THEN committed_seen ELSE n_committed_seen END AS committed_seen
FROM pairs
