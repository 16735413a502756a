-- pgmill schema version 5: the queue name constraint of version 3, same rule, cheaper check.
--
-- Version 3 wrote the rule as one regular expression with a bounded repetition,
-- '^[A-Za-z0-9_.:/-]{1,128}$'. Postgres builds that repetition out into 128 copies of the
-- character class and checks the constraint on every insert and on every update of a job (claims
-- and completions included, whatever columns they change): a fifth of the server's work when
-- jobs are worked through quickly. The length is already held
-- by version 1's queue_length constraint (1 to 128 characters), so the character rule alone,
-- '^[A-Za-z0-9_.:/-]+$', says the same thing at about a twentieth of the cost.
--
-- Safe while version 4 clients run: they only write names that follow the rule. The new
-- constraint is added NOT VALID (the table's lock is held only for a moment, no scan) before the
-- old one is dropped, so no moment lets a bad name in; version 6 validates it without blocking
-- writes.

ALTER TABLE {schema}.pgmill_job
    ADD CONSTRAINT queue_name_characters CHECK (queue ~ '^[A-Za-z0-9_.:/-]+$') NOT VALID;

ALTER TABLE {schema}.pgmill_job DROP CONSTRAINT queue_name;

ALTER TABLE {schema}.pgmill_job RENAME CONSTRAINT queue_name_characters TO queue_name;
