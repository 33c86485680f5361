-- Every entry of a ledger version, with the place of its directory in the version's manifest
-- (_seq): the stored entries as they are, and each result row of a ledger verdict in a run's
-- results written into the version, as the entry of its message first seen in that run. A
-- sink row with no committed record keeps no position: it never stands for a record of the
-- topic.
SELECT message_id, topic, "partition", first_offset, offsets, sink_count, first_run_id,
       verdict, positions, record_time_ms, sink_time_ms, committed_seen, _seq
FROM ledger_stored
UNION ALL
SELECT message_id,
       CASE WHEN verdict IN ${UNMATCHED} THEN CAST(NULL AS VARCHAR) ELSE topic END AS topic,
       CASE WHEN verdict IN ${UNMATCHED} THEN CAST(NULL AS INTEGER) ELSE "partition" END
           AS "partition",
       CASE WHEN verdict IN ${UNMATCHED} THEN CAST(NULL AS BIGINT) ELSE first_offset END
           AS first_offset,
       CASE WHEN verdict IN ${UNMATCHED} THEN CAST([] AS BIGINT[]) ELSE offsets END AS offsets,
       sink_count, first_run_id, verdict,
       CASE WHEN verdict IN ${UNMATCHED} THEN ${EMPTY_POSITIONS} ELSE positions END AS positions,
       record_time_ms, sink_time_ms, committed_seen, _seq
FROM ledger_results
WHERE message_id IS NOT NULL AND verdict IN ${LEDGER_VERDICTS}
