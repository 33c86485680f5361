-- The run's way from source to sink, one row: the source messages that settled in this run
-- (produced: their rows, less the extra rows of ids named more than once), those a committed
-- record carries (published: produced minus unpublished), the window's committed messages
-- (committed), those with a sink row (delivered), and the findings
-- beside them: the window's committed messages no source row names (unsourced: an extra
-- producer, a replay from elsewhere; a finding, not a loss), the settled source rows without a
-- messageId, and the extra rows of ids the source holds more than once.
-- committed is counted from the joined rows the verdict steps kept, not by a distinct count
-- over the window again: a fast-path message has one joined row, and every row of a message is
-- on one path (its hash decides): the fast path's rows are the joined rows less the general
-- path's (fast_joined itself is a view: counting it would join again); delivered from the
-- verdict counts.
-- source_ids is a view over source_rows, not a stored relation: each count of it would test
-- every settled row's messageId again (10M rows: about half a second a pass), so the messages
-- are the settled rows (a read of `judge` alone) less those without a messageId
-- (06_source_invalid).
WITH named AS (
    SELECT (SELECT count(*) FROM source_rows WHERE judge)
           - (SELECT count(*) FROM source_invalid) AS n_rows
), extra AS (
    SELECT coalesce(sum(n_rows - 1), 0) AS n_rows FROM source_repeated
)
SELECT
    named.n_rows - extra.n_rows AS produced,
    named.n_rows - extra.n_rows - (SELECT count(*) FROM source_judged) AS published,
    (SELECT count(*) FROM joined WHERE "offset" IS NOT NULL)
      - (SELECT count(*) FROM general_joined WHERE "offset" IS NOT NULL)
      + (SELECT count(DISTINCT message_id) FROM general_joined WHERE "offset" IS NOT NULL)
      AS committed,
    (SELECT coalesce(sum(with_sink_rows), 0) FROM verdict_counts WHERE verdict IN ${JUDGED})
      AS delivered,
    (SELECT count(*) FROM source_unsourced) AS unsourced,
    (SELECT count(*) FROM source_invalid) AS source_invalid,
    extra.n_rows AS source_duplicates
FROM named CROSS JOIN extra
