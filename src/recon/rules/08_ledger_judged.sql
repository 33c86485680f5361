-- This run's verdicts of the general path's messages that the ledger keeps (a sink row with no
-- committed record keeps no position: it never stands for a record of the topic), and its
-- unpublished source messages (no position either). A lost message keeps its record's time, a
-- pending one its first sink row's and whether a committed record of it was read.
SELECT message_id, verdict AS n_verdict, sink_count AS n_sink_count,
       CASE WHEN verdict IN ${UNMATCHED} THEN ${EMPTY_POSITIONS} ELSE positions END
           AS n_positions,
       record_time_ms AS n_record_time_ms, sink_time_ms AS n_sink_time_ms,
       committed_seen AS n_committed_seen
FROM general_final
WHERE message_id IS NOT NULL AND verdict IN ${LEDGER_VERDICTS}
UNION ALL
SELECT message_id, 'unpublished' AS n_verdict, CAST(0 AS BIGINT) AS n_sink_count,
       ${EMPTY_POSITIONS} AS n_positions, CAST(NULL AS BIGINT) AS n_record_time_ms,
       CAST(NULL AS BIGINT) AS n_sink_time_ms, CAST(NULL AS BOOLEAN) AS n_committed_seen
FROM source_judged
