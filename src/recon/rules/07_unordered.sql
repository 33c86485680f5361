-- How many of the run's usable records and of the sink's rows carry no upsert key or position
-- (order declared): they take no part in the order check, and the run says how many.
SELECT (SELECT count(*) FROM checked_records
        WHERE ok AND (order_key IS NULL OR order_position IS NULL)) AS records,
       (SELECT count(*) FROM sink_all
        WHERE order_key IS NULL OR order_position IS NULL) AS sink_rows
