-- Sets the history ring's slot width, when it differs (returning it; nothing when it was already
-- that width). The slots then fill at the new width: a slot may hold rows of two laps for a
-- while, which only delays its truncation (a slot is emptied when all its rows are past
-- retention).
-- $1: the width, in seconds
UPDATE {schema}.pgmill_storage AS s
SET done_slot_seconds = $1::integer, updated_at = now()
WHERE s.name = 'default' AND s.done_slot_seconds <> $1::integer
RETURNING s.done_slot_seconds AS done_slot_seconds
