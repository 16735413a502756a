-- Reverts version 5: the queue name constraint back in version 3's form, validated as version 4
-- left it. Every row already follows the rule (the version 5 constraint held it), so the
-- validation finds nothing; it scans the table under this transaction's exclusive lock.

ALTER TABLE {schema}.pgmill_job DROP CONSTRAINT queue_name;

ALTER TABLE {schema}.pgmill_job
    ADD CONSTRAINT queue_name CHECK (queue ~ '^[A-Za-z0-9_.:/-]{1,128}$');
