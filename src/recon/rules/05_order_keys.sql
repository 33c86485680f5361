-- For an upsert sink (the pipeline declares order): how each committed record of the window
-- stands against the sink row of its key, for the records the per-message verdicts found no
-- sink row of their own (05_fast_judged, 05_general_judged apply it to those only).
--   newest  the largest position among the window's records of the key
--   held    the position the key's sink row holds (sink_all: the table, read whole)
-- The newest record of a key whose row holds an older position is out_of_order (a stale
-- overwrite); any other record of a key that has a row was superseded there (delivered). A key
-- without a row leaves its records lost. A message at several positions counts at its last.
WITH keyed AS (
    SELECT message_id, min(order_key) AS order_key, max(order_position) AS order_position
    FROM checked_records
    WHERE ok AND order_key IS NOT NULL AND order_position IS NOT NULL
    GROUP BY message_id
),
newest AS (
    SELECT order_key, max(order_position) AS newest FROM keyed GROUP BY order_key
),
held AS (
    SELECT order_key, max(order_position) AS held
    FROM sink_all WHERE order_key IS NOT NULL AND order_position IS NOT NULL
    GROUP BY order_key
),
placed AS (
    SELECT k.message_id, k.order_key, n.newest, h.held,
           k.order_position = n.newest AND h.held < n.newest AS stale
    FROM keyed k JOIN newest n ON k.order_key = n.order_key
    JOIN held h ON k.order_key = h.order_key
)
SELECT message_id,
       CASE WHEN stale THEN 'out_of_order' ELSE 'delivered' END AS order_verdict,
       CASE WHEN stale THEN printf(${OUT_OF_ORDER_DETAIL}, order_key, held, newest)
            ELSE printf(${SUPERSEDED_DETAIL}, order_key, held) END AS order_detail
FROM placed
