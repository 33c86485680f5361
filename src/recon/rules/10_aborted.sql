-- Records the read_uncommitted pass saw that were not read committed: the records of aborted
-- transactions, whose sink rows are aborted reads rather than phantoms.
SELECT e.message_id, e.topic, e."partition", e."offset"
FROM every e
LEFT JOIN (
    SELECT topic, "partition", "offset" FROM records
    UNION ALL
    SELECT topic, "partition", "offset" FROM readable
) c ON c.topic = e.topic AND c."partition" = e."partition" AND c."offset" = e."offset"
WHERE e.message_id IS NOT NULL AND c."offset" IS NULL
