-- The source rows that name a messageId met with the joined rows the verdict steps kept (the
-- window's usable records and the new sink rows, already paired), in one full outer join, and
-- only the rows found on one side kept: a settled source row no joined row names may be
-- unpublished (06_source_judged), a record no source row names is unsourced
-- (07_source_unsourced). Nearly every row meets its other side, and what met is never read
-- again: keeping it would store the whole window once more (Spark, 10M rows: a checkpoint of
-- 10M rows). One join of the rows as they are: two anti joins (one each way) read both sides
-- twice, and grouping the source by its text ids first costs as much as the join (Spark, 10M
-- rows: about 20 s each).
SELECT coalesce(s.message_id, j.message_id) AS message_id, s.source_key, s.judge,
       j."partition", j."offset", s.message_id IS NOT NULL AS sourced
FROM (SELECT message_id, source_key, judge FROM source_rows
      WHERE message_id IS NOT NULL AND trim(message_id) <> '') s
FULL OUTER JOIN (SELECT message_id, "partition", "offset" FROM joined) j
ON s.message_id = j.message_id
WHERE s.message_id IS NULL OR j.message_id IS NULL
