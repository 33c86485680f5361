-- Records read committed per partition, in the window and past it. Offsets are unique per
-- record, so a partition with as many as it has offsets in [from, pending_to) holds no aborted
-- record and no transaction marker there: the read_uncommitted pass skips it.
SELECT topic, "partition", count(*) AS n
FROM (
    SELECT topic, "partition" FROM records
    UNION ALL
    SELECT topic, "partition" FROM readable
) r
GROUP BY topic, "partition"
