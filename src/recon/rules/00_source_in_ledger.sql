-- The settled source messages the ledger has an entry of (the run's input source_known): an
-- earlier run met their record, or already found them unpublished.
SELECT DISTINCT l.message_id
FROM ledger_all l SEMI JOIN source_ids s ON l.message_id = s.message_id
