-- The joined rows of the general path's messages.
SELECT j.* FROM joined j WHERE hash(j.message_id) IN (SELECT h FROM general_hashes)
