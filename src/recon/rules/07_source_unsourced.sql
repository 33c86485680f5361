-- The window's committed messages that no source row in the run's horizon names: the records
-- 06_source_unmatched met with no source row.
SELECT message_id, min("partition") AS "partition", min("offset") AS "offset"
FROM source_unmatched
WHERE NOT sourced AND "offset" IS NOT NULL
GROUP BY message_id
