-- Whether the job table has outgrown the statistics the planner last took of it, so that the
-- analyzer takes them again (job_analyze.sql). A prepared statement's generic plan is made from
-- the statistics of when it is made and kept until they change: a claim's plan made while the
-- table held a few rows finds the claimed ids by a sequential scan (the cheapest way at that
-- size), and keeps doing so after a burst of inserts has grown the table to thousands of pages,
-- several times slower than once replanned. Worse, an ANALYZE that ran while a large insert was
-- still uncommitted counted none of its rows: the planner then takes the full table for a nearly
-- empty one, and a claim sorts every available job. Either lasts until autovacuum's next
-- ANALYZE, up to autovacuum_naptime after the table changed and later on a busy server. An
-- ANALYZE updates the table's pg_class row, which makes every session replan its statements on
-- the table.
-- Outgrown: the table's rows, as its inserts less its deletes since the statistics system was
-- last reset (cumulative counters, which no ANALYZE overwrites; rolled-back inserts and deletes
-- count too), less $4, are at least $2 and at least $3 times the rows of the statistics
-- (reltuples; -1, taken as 0, before the table's first VACUUM or ANALYZE). The statistics' own
-- row count, not the planner's estimate from it (rows per page times the pages now): a plan kept
-- from when the table had a page or two was made for that size, whatever the rows per page.
-- Statistics taken while a burst was uncommitted (a few rows) count as outgrown as soon as the
-- burst has committed, also when autovacuum took them, whose report then overwrites the live
-- row count (n_live_tup) with its own. $4 is how far the counters overstated the rows at the
-- analyzer's own last ANALYZE (after a TRUNCATE they still hold the inserts), so that they bring
-- one ANALYZE, not one a pass; counters below it (reset by a crash or pg_stat_reset) are taken
-- as they are. Never while a VACUUM or an ANALYZE of the table is under way or anyone holds a
-- lock ANALYZE would wait for (the progress views name other roles' tables only to privileged
-- roles; pg_locks names them to all), nor when this role may not analyze the table (ANALYZE
-- would only warn). permitted says whether this role may, as the server decides it: a member of
-- the database owner's role may analyze every table in the database; otherwise, before
-- PostgreSQL 17, a member of the table owner's role, and since 17 a role with the MAINTAIN
-- privilege on the table (its owner, unless revoked, and members of pg_maintain); superusers
-- always.
-- A client that has just committed a large insert itself passes its row count as $5: the table
-- holds at least those rows at once, before the inserting session reports them to the
-- statistics system (within a second of its commit, or ten when it then stays idle).
-- Returns no row when the schema has no job table.
-- $1: the schema's name, unquoted
-- $2: fewest rows worth analyzing for
-- $3: how many times the statistics' rows the rows must be
-- $4: how far the counters overstated the rows at the analyzer's last ANALYZE (0 if none)
-- $5: rows the caller has just inserted and committed (0 if none)
SELECT g.stats_rows AS stats_rows, g.live_rows AS live_rows, g.permitted AS permitted,
    g.live_rows >= $2::bigint AND g.live_rows >= $3::bigint * g.stats_rows AND g.permitted
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_progress_vacuum v WHERE v.relid = g.oid)
        AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_progress_analyze a WHERE a.relid = g.oid)
        AND NOT EXISTS (
            SELECT 1 FROM pg_catalog.pg_locks l
            WHERE l.locktype = 'relation' AND l.relation = g.oid AND l.granted
                AND l.mode IN ('ShareUpdateExclusiveLock', 'ShareLock',
                    'ShareRowExclusiveLock', 'ExclusiveLock', 'AccessExclusiveLock')
        )
        AS outgrown
FROM (
    SELECT c.oid AS oid,
        pg_catalog.pg_has_role(d.datdba, 'USAGE') OR CASE
            WHEN pg_catalog.current_setting('server_version_num')::integer >= 170000
                THEN pg_catalog.has_table_privilege(c.oid, 'MAINTAIN')
            ELSE pg_catalog.pg_has_role(c.relowner, 'USAGE')
        END AS permitted,
        greatest(c.reltuples, 0)::bigint AS stats_rows,
        greatest(
            CASE WHEN r.counted >= $4::bigint THEN r.counted - $4::bigint ELSE r.counted END,
            $5::bigint
        ) AS live_rows
    FROM pg_catalog.pg_class c
    JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
    JOIN pg_catalog.pg_database d ON d.datname = pg_catalog.current_database()
    CROSS JOIN LATERAL (
        SELECT greatest(pg_catalog.pg_stat_get_tuples_inserted(c.oid)
            - pg_catalog.pg_stat_get_tuples_deleted(c.oid), 0) AS counted
    ) AS r
    WHERE n.nspname = $1::text AND c.relname = 'pgmill_job'
) AS g
