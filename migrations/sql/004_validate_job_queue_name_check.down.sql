-- Reverts version 4: the queue name constraint back as version 3 left it, not validated.

ALTER TABLE {schema}.pgmill_job DROP CONSTRAINT queue_name;

ALTER TABLE {schema}.pgmill_job
    ADD CONSTRAINT queue_name CHECK (queue ~ '^[A-Za-z0-9_.:/-]{1,128}$') NOT VALID;
