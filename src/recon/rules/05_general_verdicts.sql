-- The general path's verdicts (05_general_classified decided them) with their detail: whether a
-- message sits at several positions that no repair replayed (topic_duplicate), and why the
-- verdict, in words a person can act on.
-- replayed: how many of a judged message's positions hold a repair's replay. A replayed message
-- also sits at its first position (its ledger entry's), so only messages at several positions
-- are looked at: a big window's single-position messages are never unnested.
WITH replayed AS (
    SELECT x.message_id, count(*) AS n_replays
    FROM (SELECT message_id, unnest(positions) AS p FROM general_classified
          WHERE judged AND array_length(positions) > 1) x
    JOIN replays r ON r.topic = x.p.topic AND r."partition" = x.p."partition"
        AND r."offset" = x.p."offset"
    GROUP BY x.message_id
),
flagged AS (
    SELECT c.*, coalesce(r.n_replays, 0) AS n_replays,
           c.judged AND array_length(c.positions) - coalesce(r.n_replays, 0) > 1
               AS topic_duplicate,
           coalesce(c.l_first_run_id, '?') AS first_run,
           array_to_string(list_transform(list_slice(c.positions, 1, ${MAX_POSITIONS_IN_DETAIL}),
               q -> printf('%s/%d@%d', q.topic, q."partition", q."offset")), ', ') AS listed
    FROM general_classified c LEFT JOIN replayed r ON c.message_id = r.message_id
)
SELECT verdict, message_id, positions[1].topic AS topic,
       positions[1]."partition" AS "partition",
       list_sort(list_transform(positions, q -> q."offset")) AS offsets,
       positions[1]."offset" AS first_offset, CAST(total AS BIGINT) AS sink_count,
       new_keys AS sink_keys, topic_duplicate,
       -- Why the verdict, in words a person can act on.
       NULLIF(concat_ws('; ',
           CASE WHEN verdict = 'lost' THEN 'no sink row for a committed record' END,
           CASE WHEN verdict = 'duplicated' THEN
               printf('%d sink rows, %d new in this run', total, n_new) END,
           CASE WHEN verdict = 'duplicated' AND n_changed > 0 THEN
               printf(${COPIES_DIFFER}, n_changed, array_to_string(changed_fields, ', ')) END,
           CASE WHEN verdict = 'mismatched' THEN
               printf(${MISMATCHED_DETAIL}, array_to_string(changed_fields, ', ')) END,
           CASE WHEN verdict = 'duplicated' AND l_verdict = 'lost' THEN
               ${LATE_DELIVERY} || first_run || ')' END,
           CASE WHEN verdict IN ('delivered', 'late', 'mismatched') AND l_verdict = 'lost' THEN
               ${LATE_DELIVERY} || first_run || ')' END,
           CASE WHEN verdict IN ('delivered', 'late', 'mismatched', 'duplicated')
                     AND l_verdict = 'diverted' THEN ${DIVERTED_DELIVERY} || first_run || ')' END,
           CASE WHEN verdict = 'late' THEN
               printf(${LATE_DETAIL}, latency_ms, ${LATE_AFTER_MS}) END,
           CASE WHEN l_verdict IN ${JUDGED} AND has_w THEN
               'read again (group reset or replay), first seen in run ' || first_run END,
           CASE WHEN l_verdict IN ${JUDGED} AND NOT has_w AND verdict IN ${JUDGED} THEN
               'new sink rows for a message first seen in run ' || first_run END,
           CASE WHEN l_verdict IN ${UNMATCHED} AND verdict IN ${JUDGED} THEN
               'its sink rows were reported as ' || l_verdict
               || ' before the record was committed (first seen in run ' || first_run || ')' END,
           CASE WHEN topic_duplicate THEN
               'in the topic at ' || CAST(array_length(positions) AS VARCHAR) || ' positions: '
               || listed END,
           CASE WHEN n_replays > 0 THEN
               printf('%d of its positions are replays by a repair (recon.repairs): %s',
                      n_replays, listed) END,
           CASE WHEN verdict = 'pending' THEN ${PENDING} END,
           CASE WHEN verdict = 'aborted_read' THEN
               'id only in records of aborted transactions: ' || listed END,
           CASE WHEN recalled THEN
               'read as a committed record by an earlier run (pending then), since removed from '
               || 'inside the log (compacted away) after the group committed past it: judged '
               || 'from that read at ' || listed END,
           CASE WHEN verdict = 'unverifiable' AND expired THEN ${PENDING_REMOVED} || listed END,
           CASE WHEN verdict = 'unverifiable' AND NOT expired AND NOT judged
                     AND (SELECT count(*) > 0 FROM removed_ranges) THEN ${NOT_FOUND_REMOVED} END,
           CASE WHEN verdict = 'unverifiable' AND NOT expired AND NOT judged THEN
               (SELECT max(detail) FROM compaction_gaps) END,
           CASE WHEN verdict = 'unverifiable' AND judged THEN
               (SELECT max(detail) FROM target_removed) END,
           CASE WHEN verdict = 'phantom' AND expired THEN ${PENDING_NEVER_COMMITTED} || listed END,
           CASE WHEN verdict = 'phantom' AND NOT expired THEN ${PHANTOM} END
       ), '') AS detail,
       positions, latency_ms, coalesce(w_ms, l_record_time_ms) AS record_time_ms,
       first_sink_ms AS sink_time_ms, committed_seen
FROM flagged
