-- Decides the general path's messages from every fact known about them, grouped by messageId:
--   w  a committed record of the window         p  a pending record (past the window's end)
--   s  a new sink row of this run               u  a record only the read_uncommitted pass saw
--   l  the message's ledger entry from earlier runs
-- total = the ledger's sink count + this run's new sink rows.
--   judged (a record in the window, or judged before and new sink rows): lost (total 0;
--     unverifiable when the sink is a Kafka topic whose retention removed records no run read:
--     target_removed),
--     delivered (1) or duplicated (>1); 05_general_verdicts then flags topic_duplicate when it
--     sits at more than one position that no repair replayed (input replays: a replay is the
--     same message again on purpose), and words the detail.
--     A delivery with a record in the window and its sink row new in this run has a latency
--     (its first sink row's time minus its first record's timestamp, when both are known), and
--     so has one whose record an earlier run judged lost (from the record time its ledger entry
--     kept), and one an earlier run left pending with its sink row (from the sink row time its
--     entry kept): over the pipeline's bound, it is late rather than delivered. A lost message
--     keeps its record time (record_time_ms), a pending one its first sink row's time
--     (sink_time_ms); one an earlier run judged diverted (a dead-letter record, written since)
--     is measured from its record time as a lost one is. Each new sink row counts as changed by
--     the fields it differs in from the record at the message's first position in the window
--     (02_joined compared each pair): a
--     delivery whose one sink row changed a field is mismatched (before late); a duplicated
--     message says how many copies changed.
--   pending (a pending record, or pending in the ledger and not expired): pending.
--   expired (pending in the ledger, no record now, every position it was seen at behind the
--     window's end or the log-start offset): judged as a committed record (lost, delivered,
--     duplicated by its sink rows) when a run read it committed (committed_seen: a pending
--     record below the last stable offset) and it is gone from inside the log (compacted
--     away); else aborted_read if the uncommitted pass found it, unverifiable if a position is
--     below the log-start offset or the topic is compacted with gaps in this run's read range
--     (compaction_gaps), else phantom.
--   only new sink rows: aborted_read, else unverifiable (this run lost records to retention, or
--     the topic is compacted and its read range has offsets without a record: compaction_gaps),
--     else phantom.
--   judged before and nothing new: no row.
-- A joined row pairs a record with a sink row (or stands alone): a message at two positions with
-- two sink rows has four. Every aggregate below takes distinct positions and keys, so the joined
-- rows go in as they are (a DISTINCT of each kind was one shuffle more in Spark).
WITH facts AS (
    SELECT message_id, 'w' AS src, ${POS} AS pos, sink_key, record_time AS at_time, differs,
           ${NO_LEDGER}, CAST(NULL AS BOOLEAN) AS seen_c
    FROM general_joined WHERE "offset" IS NOT NULL
    UNION ALL
    SELECT message_id, 's' AS src, ${NULL_POS} AS pos, sink_key, sink_time AS at_time,
           ${NO_DIFFERS}, ${NO_LEDGER}, CAST(NULL AS BOOLEAN) AS seen_c
    FROM general_joined WHERE sink_key IS NOT NULL
    UNION ALL
    SELECT message_id, 'p' AS src, ${POS} AS pos, CAST(NULL AS VARCHAR) AS sink_key,
           ${NO_TIME}, ${NO_DIFFERS}, ${NO_LEDGER}, coalesce(read_committed, false) AS seen_c
    FROM (SELECT r.*, r."offset" < e.last_stable AS read_committed
          FROM pending r LEFT JOIN partition_ends e ON e."partition" = r."partition") pc
    WHERE invalid_reason IS NULL AND message_id IS NOT NULL AND trim(message_id) <> ''
      AND message_id IN (SELECT message_id FROM general_ids)
    UNION ALL
    SELECT message_id, 'u' AS src, ${POS} AS pos, CAST(NULL AS VARCHAR) AS sink_key,
           ${NO_TIME}, ${NO_DIFFERS}, ${NO_LEDGER}, CAST(NULL AS BOOLEAN) AS seen_c
    FROM uncommitted
    WHERE message_id IS NOT NULL AND trim(message_id) <> ''
      AND message_id IN (SELECT message_id FROM general_ids)
    UNION ALL
    SELECT message_id, 'l' AS src, ${NULL_POS} AS pos, CAST(NULL AS VARCHAR) AS sink_key,
           ${NO_TIME}, ${NO_DIFFERS}, CAST(sink_count AS BIGINT) AS l_sink_count,
           verdict AS l_verdict, first_run_id AS l_first_run_id, positions AS l_positions,
           record_time_ms AS l_record_time_ms, sink_time_ms AS l_sink_time_ms,
           committed_seen AS seen_c
    FROM ledger WHERE message_id IN (SELECT message_id FROM general_ids)
),
grouped AS (
    SELECT message_id,
           coalesce(list_sort(list_distinct(list(pos) FILTER (WHERE src = 'w'))),
                    ${EMPTY_POSITIONS}) AS w_pos,
           coalesce(list_sort(list_distinct(list(pos) FILTER (WHERE src = 'p'))),
                    ${EMPTY_POSITIONS}) AS p_pos,
           coalesce(list_sort(list_distinct(list(pos) FILTER (WHERE src = 'u'))),
                    ${EMPTY_POSITIONS}) AS u_pos,
           coalesce(list_sort(list_distinct(list(sink_key) FILTER (WHERE src = 's'))),
                    CAST([] AS VARCHAR[])) AS new_keys,
           list({'pos': pos, 'sink_key': sink_key, 'differs': differs})
               FILTER (WHERE src = 'w' AND sink_key IS NOT NULL) AS pairs,
           epoch_ms(min(at_time) FILTER (WHERE src = 's')) AS s_ms,
           epoch_ms(min(at_time) FILTER (WHERE src = 'w')) AS w_ms,
           max(l_sink_count) AS l_sink_count, max(l_verdict) AS l_verdict_raw,
           max(l_first_run_id) AS l_first_run_id, max(l_record_time_ms) AS l_record_time_ms,
           max(l_sink_time_ms) AS l_sink_time_ms,
           first(l_positions) FILTER (WHERE l_positions IS NOT NULL) AS l_pos_raw,
           coalesce(bool_or(seen_c), false) AS committed_seen
    FROM facts
    GROUP BY message_id
),
-- What each new sink row changed: the fields its pair with the record at the message's first
-- position differs in (02_joined compared each pair); then how many changed and which fields,
-- in declared order.
copied AS (
    SELECT *, array_length(new_keys) AS n_new,
           list_transform(new_keys,
               k -> list_sort(list_filter(pairs, x -> x.sink_key = k))[1].differs) AS copy_differs
    FROM grouped
),
changed AS (
    SELECT *, array_length(list_filter(copy_differs, d -> array_length(d) > 0)) AS n_changed,
           flatten(list_filter(copy_differs, d -> d IS NOT NULL)) AS all_changed
    FROM copied
),
-- Where a pending ledger entry stands against this run's window, per position it was seen at.
expiry AS (
    SELECT x.message_id,
           bool_and(coalesce(x.p."offset" < greatest(e.window_to, e.log_start), false)) AS behind,
           bool_or(coalesce(x.p."offset" < e.log_start, false)) AS gone
    FROM (SELECT message_id, unnest(positions) AS p FROM ledger
          WHERE verdict = 'pending' AND message_id IN (SELECT message_id FROM general_ids)) x
    LEFT JOIN partition_ends e ON e."partition" = x.p."partition"
    GROUP BY x.message_id
),
flags AS (
    SELECT g.*, coalesce(g.l_sink_count, 0) + g.n_new AS total,
           -- the first sink row's time: of this run's rows, or of those a pending entry saw
           CASE WHEN g.l_verdict_raw = 'pending' AND g.l_sink_time_ms IS NOT NULL
                     AND (g.s_ms IS NULL OR g.l_sink_time_ms < g.s_ms)
                THEN g.l_sink_time_ms ELSE g.s_ms END AS first_sink_ms,
           list_filter(${COMPARED}, f -> list_contains(g.all_changed, f)) AS changed_fields,
           coalesce(g.l_verdict_raw, '') AS l_verdict,
           coalesce(g.l_pos_raw, ${EMPTY_POSITIONS}) AS l_pos,
           array_length(g.w_pos) > 0 AS has_w, array_length(g.p_pos) > 0 AS has_p,
           array_length(g.u_pos) > 0 AS has_u,
           coalesce(x.behind, false) AS behind, coalesce(x.gone, false) AS gone
    FROM changed g LEFT JOIN expiry x ON g.message_id = x.message_id
),
states AS (
    SELECT *, has_w OR (l_verdict IN ${JUDGED} AND n_new > 0) AS judged,
           CASE WHEN has_w AND (n_new > 0 OR l_verdict = 'pending') THEN first_sink_ms - w_ms
                WHEN l_verdict IN ('lost', 'diverted') AND n_new > 0
                    THEN s_ms - l_record_time_ms END
               AS latency_ms
    FROM flags
),
states1 AS (
    SELECT *, NOT judged AND NOT has_p AND l_verdict = 'pending' AND behind AS expired
    FROM states
),
-- recalled: an expired pending message a run read as a committed record (committed_seen) that
-- no record shows now, within the log (not below the log-start offset) and not aborted: the
-- log cleaner removed it (a compacted topic). It was committed, and the group has committed
-- past it: it is judged from that read, with its sink rows.
states1r AS (
    SELECT *, expired AND committed_seen AND NOT has_u AND NOT gone AS recalled
    FROM states1
),
states2 AS (
    SELECT *, NOT judged AND NOT expired AND (has_p OR l_verdict = 'pending') AS pending_now
    FROM states1r
),
classified AS (
    SELECT *,
        CASE WHEN (judged OR recalled) AND total = 0
                  AND (SELECT count(*) > 0 FROM target_removed) THEN 'unverifiable'
             WHEN (judged OR recalled) AND total = 0 THEN 'lost'
             WHEN judged AND total = 1 AND n_new = 1 AND n_changed > 0 THEN 'mismatched'
             WHEN judged AND total = 1 AND coalesce(latency_ms > ${LATE_AFTER_MS}, false)
                 THEN 'late'
             WHEN (judged OR recalled) AND total = 1 THEN 'delivered'
             WHEN judged OR recalled THEN 'duplicated'
             WHEN pending_now THEN 'pending'
             WHEN expired AND has_u THEN 'aborted_read'
             WHEN expired AND gone THEN 'unverifiable'
             WHEN expired AND (SELECT count(*) > 0 FROM compaction_gaps) THEN 'unverifiable'
             WHEN expired THEN 'phantom'
             WHEN n_new > 0 AND has_u THEN 'aborted_read'
             WHEN n_new > 0 AND (SELECT count(*) > 0 FROM removed_ranges) THEN 'unverifiable'
             WHEN n_new > 0 AND (SELECT count(*) > 0 FROM compaction_gaps) THEN 'unverifiable'
             WHEN n_new > 0 THEN 'phantom' END AS verdict,
        CASE WHEN judged OR recalled THEN list_sort(list_distinct(list_concat(w_pos, l_pos)))
             WHEN pending_now THEN list_sort(list_distinct(list_concat(p_pos, l_pos)))
             WHEN has_u THEN u_pos
             WHEN expired THEN l_pos
             ELSE ${EMPTY_POSITIONS} END AS positions
    FROM states2
)
-- Kept: the verdicts read it twice (the replayed positions, the detail); Spark would compute
-- every step above again for each. Only what 05_general_verdicts reads is kept (not each
-- message's pairs and per-copy changes).
SELECT message_id, verdict, positions, judged OR recalled AS judged, expired, recalled, has_w,
       total, n_new, new_keys, n_changed, changed_fields, l_verdict, l_first_run_id,
       l_record_time_ms, w_ms, first_sink_ms, latency_ms, committed_seen
FROM classified WHERE verdict IS NOT NULL
