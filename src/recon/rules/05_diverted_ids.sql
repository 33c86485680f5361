-- One row per message found in a dead-letter or retry topic: its first dead-letter record (by
-- topic, partition, offset), how many it has there, and the detail a `diverted` row shows (the
-- dead-letter record's coordinates and the error text it carries, cut to 200 characters).
WITH firsts AS (
    SELECT message_id, count(*) AS n,
           min({'t': dl_topic, 'p': dl_partition, 'o': dl_offset, 'e': error}) AS f
    FROM dead_lettered
    WHERE message_id IS NOT NULL
    GROUP BY message_id
)
SELECT message_id, n,
       concat('in ', f.t, '/', CAST(f.p AS VARCHAR), '@', CAST(f.o AS VARCHAR),
              CASE WHEN n > 1 THEN concat(' (', CAST(n AS VARCHAR), ' dead-letter records)')
                   ELSE '' END,
              CASE WHEN f.e IS NOT NULL THEN concat(': ', left(f.e, 200)) ELSE '' END)
           AS detail
FROM firsts
