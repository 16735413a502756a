-- Reverts version 11: the retention rules go (clients apply their own configuration).

DROP TABLE {schema}.pgmill_retention;
