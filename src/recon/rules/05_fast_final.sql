-- The fast path's verdicts with the records that left the pipeline on purpose accounted for:
-- a message with a record outside the pipeline's expect (excluded_ids) is `excluded`, whatever
-- its sink rows (a row for one should not be there: its detail says so); a lost message found
-- in a dead-letter or retry topic (diverted_ids) is `diverted`, with where and why. A diverted
-- message with a sink row stays `delivered` (reprocessed). The detail rides in order_detail,
-- which 06_results shows for these verdicts; a diverted message keeps its record's time, from
-- which a later run measures the latency of its delivery.
SELECT CASE WHEN x.message_id IS NOT NULL AND f."offset" IS NOT NULL THEN 'excluded'
            WHEN d.message_id IS NOT NULL AND f.verdict = 'lost' THEN 'diverted'
            ELSE f.verdict END AS verdict,
       f.message_id, f.topic, f."partition", f."offset", f.sink_key, f.latency_ms, f.differs,
       CASE WHEN x.message_id IS NOT NULL AND f."offset" IS NOT NULL THEN
                (CASE WHEN f.sink_key IS NULL THEN ${EXCLUDED_DETAIL}
                      ELSE printf(${EXCLUDED_WRITTEN}, 1) END)
            WHEN d.message_id IS NOT NULL AND f.verdict = 'lost' THEN d.detail
            ELSE f.order_detail END AS order_detail,
       CASE WHEN x.message_id IS NULL THEN f.record_time_ms END AS record_time_ms
FROM fast_judged f
LEFT JOIN excluded_ids x ON f.message_id = x.message_id
LEFT JOIN diverted_ids d ON f.message_id = d.message_id
