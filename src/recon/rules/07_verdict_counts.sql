-- Rows per verdict, how many of them carry the topic_duplicate flag, and how many have a sink
-- row (the funnel's `delivered`, 07_funnel.sql): what the contract judges (verdicts absent from
-- the run count 0).
SELECT verdict, count(*) AS n, count(*) FILTER (WHERE topic_duplicate) AS topic_duplicates,
       count(*) FILTER (WHERE sink_count > 0) AS with_sink_rows
FROM results
GROUP BY verdict
