-- Decides which messages are outside the records the pipeline's sink is expected to hold
-- (expect: declared; ${EXPECTED}, recon.rules.expect, over the fields the reader extracted into
-- expect_fields): a message with a usable record the predicate refuses. Its verdict becomes
-- `excluded` (05_fast_final, 05_general_final), never `lost`.
SELECT DISTINCT message_id
FROM records
WHERE invalid_reason IS NULL AND message_id IS NOT NULL AND trim(message_id) <> ''
  AND NOT (${EXPECTED})
