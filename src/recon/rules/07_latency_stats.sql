-- Delivery latency per partition and over the whole run (the row whose partition is null):
-- how many judged messages have one, how many of those are negative (the sink's clock behind
-- Kafka's: reported, never clipped), the minimum, p50, p95, p99 and maximum in milliseconds.
-- Exact, nearest rank: pN is the smallest latency with at least N% of the latencies at or below
-- it. Counted over the distinct latencies, not sorted row by row, and in integers only. The
-- whole run's counts add up the partitions' rather than group the results again: Spark then
-- reuses the one grouping's shuffle for both, and scans the results once, not twice.
WITH per_partition AS (
    SELECT "partition", latency_ms, count(*) AS n FROM results
    WHERE latency_ms IS NOT NULL GROUP BY "partition", latency_ms
),
counted AS (
    SELECT "partition", latency_ms, n FROM per_partition
    UNION ALL
    SELECT CAST(NULL AS INTEGER) AS "partition", latency_ms, CAST(sum(n) AS BIGINT) AS n
    FROM per_partition GROUP BY latency_ms
),
running AS (
    SELECT "partition", latency_ms, n,
           sum(n) OVER (PARTITION BY "partition" ORDER BY latency_ms
                        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS upto,
           sum(n) OVER (PARTITION BY "partition") AS total
    FROM counted
)
SELECT "partition", CAST(max(total) AS BIGINT) AS messages,
       CAST(coalesce(sum(n) FILTER (WHERE latency_ms < 0), 0) AS BIGINT) AS negative,
       min(latency_ms) AS min_ms,
       min(latency_ms) FILTER (WHERE upto * 2 >= total) AS p50_ms,
       min(latency_ms) FILTER (WHERE upto * 100 >= total * 95) AS p95_ms,
       min(latency_ms) FILTER (WHERE upto * 100 >= total * 99) AS p99_ms,
       max(latency_ms) AS max_ms
FROM running
GROUP BY "partition"
