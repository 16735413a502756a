-- Reverts version 6: the queue name constraint back as version 5 left it, not validated.

ALTER TABLE {schema}.pgmill_job DROP CONSTRAINT queue_name;

ALTER TABLE {schema}.pgmill_job
    ADD CONSTRAINT queue_name CHECK (queue ~ '^[A-Za-z0-9_.:/-]+$') NOT VALID;
