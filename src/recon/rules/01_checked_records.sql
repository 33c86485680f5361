-- Decides which window records carry a usable messageId. A record the reader quarantined
-- (invalid_reason) or whose id is null, empty or only spaces is not judged as a message: it
-- becomes one `invalid` row (06_results.sql). CASE evaluates lazily: only an id that starts with
-- a space is trimmed. The compared payload goes on as one digest per field (${PAYLOAD_DIGESTS},
-- recon.rules.judging): the join carries 8 bytes a field, not the text.
SELECT message_id, topic, "partition", "offset", invalid_reason, "timestamp",
       ${PAYLOAD_DIGESTS} AS payload_digests,
       order_key, order_position,
       CASE WHEN invalid_reason IS NOT NULL THEN false
            WHEN message_id IS NULL OR message_id = '' THEN false
            WHEN starts_with(message_id, ' ') THEN trim(message_id) <> ''
            ELSE true END AS ok
FROM records
