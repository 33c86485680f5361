-- How many sink rows the run passed to the rules (reported with the run).
SELECT count(*) AS n FROM sink_rows
