-- How many of the run's usable records and of the sink's rows carry no upsert key or position
-- (order declared): they take no part in the order check, and the run says how many. And how
-- many keys have more than one sink row: an upsert sink should hold one per key (a missing
-- unique constraint?); such a key is judged by its row with the highest position.
SELECT (SELECT count(*) FROM checked_records
        WHERE ok AND (order_key IS NULL OR order_position IS NULL)) AS records,
       (SELECT count(*) FROM sink_all
        WHERE order_key IS NULL OR order_position IS NULL) AS sink_rows,
       (SELECT count(*) FROM (SELECT order_key FROM sink_all WHERE order_key IS NOT NULL
                              GROUP BY order_key HAVING count(*) > 1) k) AS shared_keys
