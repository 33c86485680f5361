-- How many of the run's usable records and sink rows carry no time (a null Kafka timestamp, a
-- null in sink.time_column): their messages get no latency, and the run says how many.
SELECT (SELECT count(*) FROM checked_records WHERE ok AND "timestamp" IS NULL) AS records,
       (SELECT count(*) FROM checked_sink_rows WHERE ok AND sink_time IS NULL) AS sink_rows
