-- Every messageId the run has a fact about: its records (in the window and past it), its sink
-- rows, and the messages the base run left pending. Only their ledger entries are read.
SELECT message_id FROM records
UNION ALL SELECT message_id FROM pending
UNION ALL SELECT message_id FROM sink_all
UNION ALL SELECT message_id FROM carried
