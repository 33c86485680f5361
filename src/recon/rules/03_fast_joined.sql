-- The joined rows of every other message: nearly all of a window.
SELECT j.* FROM joined j ANTI JOIN general_hashes g ON hash(j.message_id) = g.h
