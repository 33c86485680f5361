-- Names the original message of each record read from the pipeline's dead-letter and retry
-- topics (input dead_letters, diverted: declared): the record at the original's position
-- (the dead-letter record's headers: orig_topic, orig_partition, orig_offset) among the
-- window's committed and pending records, else the messageId the dead-letter record carries
-- itself (read where the pipeline's records carry it: a recoverer copies value, key and
-- headers). A dead-letter record naming neither stays with a null message_id (06_results
-- reports it).
SELECT coalesce(r.message_id, p.message_id, d.message_id) AS message_id,
       d.dl_topic, d.dl_partition, d.dl_offset, d.orig_topic, d.orig_partition, d.orig_offset,
       d.error
FROM dead_letters d
LEFT JOIN (SELECT topic, "partition", "offset", message_id FROM records
           WHERE invalid_reason IS NULL) r
    ON r.topic = d.orig_topic AND r."partition" = d.orig_partition AND r."offset" = d.orig_offset
LEFT JOIN (SELECT topic, "partition", "offset", message_id FROM pending
           WHERE invalid_reason IS NULL) p
    ON p.topic = d.orig_topic AND p."partition" = d.orig_partition AND p."offset" = d.orig_offset
