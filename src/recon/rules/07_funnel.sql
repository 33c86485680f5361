-- The run's way from source to sink, one row: the source messages that settled in this run
-- (produced: their rows, less the extra rows of ids named more than once), those a committed
-- record carries (published: produced minus unpublished), the window's committed messages
-- (committed), those with a sink row (delivered), and the findings
-- beside them: the window's committed messages no source row names (unsourced: an extra
-- producer, a replay from elsewhere; a finding, not a loss), the settled source rows without a
-- messageId, and the extra rows of ids the source holds more than once.
-- committed is counted from the joined rows the verdict steps kept, not by a distinct count
-- over the window again: a fast-path message has one joined row, and every row of a message is
-- on one path (its hash decides); delivered from the verdict counts.
SELECT
    (SELECT count(*) FROM source_ids)
      - (SELECT coalesce(sum(n_rows - 1), 0) FROM source_repeated) AS produced,
    (SELECT count(*) FROM source_ids)
      - (SELECT coalesce(sum(n_rows - 1), 0) FROM source_repeated)
      - (SELECT count(*) FROM source_judged) AS published,
    (SELECT count(*) FROM fast_joined WHERE "offset" IS NOT NULL)
      + (SELECT count(DISTINCT message_id) FROM general_joined WHERE "offset" IS NOT NULL)
      AS committed,
    (SELECT coalesce(sum(with_sink_rows), 0) FROM verdict_counts WHERE verdict IN ${JUDGED})
      AS delivered,
    (SELECT count(*) FROM source_unsourced) AS unsourced,
    (SELECT count(*) FROM source_rows
     WHERE judge AND (message_id IS NULL OR trim(message_id) = '')) AS source_invalid,
    (SELECT coalesce(sum(n_rows - 1), 0) FROM source_repeated) AS source_duplicates
