-- pgmill schema version 6: validates version 5's queue name constraint.
--
-- Safe while clients run: VALIDATE CONSTRAINT scans the table under a lock that lets reads and
-- writes go on (SHARE UPDATE EXCLUSIVE). Every row follows the rule already: version 4's
-- validated constraint held it until version 5 replaced it, and version 5's holds it since.

ALTER TABLE {schema}.pgmill_job VALIDATE CONSTRAINT queue_name;
