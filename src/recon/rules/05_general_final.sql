-- The general path's verdicts with the records that left the pipeline on purpose accounted for,
-- as 05_fast_final does for the fast path: a judged message with a record outside expect in
-- this window, or whose ledger entry says it was excluded (a sink row for it arriving later), is
-- `excluded`; a lost message found in a dead-letter or retry topic is `diverted`. Pending,
-- invalid and unmatched messages without such an entry keep their verdict.
SELECT CASE WHEN ex THEN 'excluded' WHEN dv THEN 'diverted' ELSE verdict END AS verdict,
       message_id, topic, "partition", offsets, first_offset, sink_count, sink_keys,
       topic_duplicate,
       CASE WHEN ex AND sink_count = 0 THEN ${EXCLUDED_DETAIL}
            WHEN ex THEN printf(${EXCLUDED_WRITTEN}, sink_count)
            WHEN dv THEN dl_detail
            ELSE detail END AS detail,
       positions, latency_ms,
       CASE WHEN NOT ex THEN record_time_ms END AS record_time_ms, sink_time_ms, committed_seen
FROM (
    SELECT g.*, d.detail AS dl_detail,
           coalesce((x.message_id IS NOT NULL AND g.verdict IN ${JUDGED})
                    OR (le.message_id IS NOT NULL AND g.verdict <> 'pending'), false) AS ex,
           coalesce(d.message_id IS NOT NULL AND g.verdict = 'lost', false) AS dv
    FROM general_judged g
    LEFT JOIN excluded_ids x ON g.message_id = x.message_id
    LEFT JOIN (SELECT message_id FROM ledger WHERE verdict = 'excluded') le
        ON g.message_id = le.message_id
    LEFT JOIN diverted_ids d ON g.message_id = d.message_id
) j
