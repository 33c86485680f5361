-- The messages the base run left pending (from its results, or from the whole ledger when its
-- results are gone). Their ledger entries join this run even when none of their records or
-- sink rows is read again (a record that aborted, or one retention removed), so that they are
-- judged once the window passes them.
SELECT message_id FROM carried_from WHERE verdict = 'pending' AND message_id IS NOT NULL
