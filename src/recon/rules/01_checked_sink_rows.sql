-- Decides which new sink rows carry a usable messageId (not null, not empty, not only spaces,
-- not longer than a record's id may be: one length rule for both sides, recon.read.message_ids);
-- the others become one `invalid` row each (06_results.sql). The compared payload goes on as
-- one digest per field, as 01_checked_records' does.
SELECT sink_key, message_id, sink_time, ${PAYLOAD_DIGESTS} AS payload_digests,
       CASE WHEN message_id IS NULL OR message_id = '' THEN false
            WHEN length(message_id) > ${MAX_MESSAGE_ID_LENGTH} THEN false
            WHEN starts_with(message_id, ' ') THEN trim(message_id) <> ''
            ELSE true END AS ok
FROM sink_rows
