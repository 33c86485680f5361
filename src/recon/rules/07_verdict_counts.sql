-- Rows per verdict, and how many of them carry the topic_duplicate flag: what the contract
-- judges (verdicts absent from the run count 0).
SELECT verdict, count(*) AS n, count(*) FILTER (WHERE topic_duplicate) AS topic_duplicates
FROM results
GROUP BY verdict
