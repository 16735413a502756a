-- pgmill schema version 8: validates version 7's row constraint.
--
-- Safe while clients run: VALIDATE CONSTRAINT scans the table under a lock that lets reads and
-- writes go on (SHARE UPDATE EXCLUSIVE). Every row follows the rules already: version 6's
-- validated constraints held them until version 7 replaced them, and version 7's holds them since.

ALTER TABLE {schema}.pgmill_job VALIDATE CONSTRAINT row_is_valid;
