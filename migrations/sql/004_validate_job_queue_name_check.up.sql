-- pgmill schema version 4: validates version 3's queue name constraint.
--
-- Safe while clients run: VALIDATE CONSTRAINT scans the table under a lock that lets reads and
-- writes go on (SHARE UPDATE EXCLUSIVE), which it could not do in version 3's transaction, whose
-- ADD CONSTRAINT holds the table's exclusive lock until commit. A row written by SQL with a bad
-- name between version 3's scan and its constraint is moved first, as version 3 moved the others.

UPDATE {schema}.pgmill_job
SET metadata = metadata || jsonb_build_object('invalid_queue', queue),
    queue = 'pgmill:invalid'
WHERE queue !~ '^[A-Za-z0-9_.:/-]{1,128}$';

ALTER TABLE {schema}.pgmill_job VALIDATE CONSTRAINT queue_name;
