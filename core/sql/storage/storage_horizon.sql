-- What holds vacuum back on this database's tables: every session, replication slot and prepared
-- transaction whose xmin is older than the newest possible (`age` in transactions; the sessions
-- of this client's own statement excluded), oldest first, at most $1. Dead rows younger than the
-- oldest of them cannot be removed, so a held snapshot (a long report, an idle transaction that
-- took a transaction id, a replication slot, a standby's hot_standby_feedback) makes every
-- table's dead rows pile up. For a session the row says how long its transaction or query has
-- run, who runs it and what it is doing, when this role may see it (pg_read_all_stats, or the
-- same role): otherwise those columns are NULL and `visible` is false. Slots have no start time;
-- a prepared transaction has its prepare time.
-- $1: most rows
SELECT h.kind AS kind, h.holder AS holder, h.xmin_age AS xmin_age, h.held_for_us AS held_for_us,
    h.role_name AS role_name, h.application_name AS application_name, h.state AS state,
    h.visible AS visible
FROM (
    SELECT 'session'::text AS kind, a.pid::text AS holder, age(a.backend_xmin)::bigint AS xmin_age,
        (extract(epoch FROM now() - coalesce(a.xact_start, a.query_start)) * 1000000)::bigint
            AS held_for_us,
        a.usename::text AS role_name, a.application_name AS application_name,
        a.state AS state, a.xact_start IS NOT NULL OR a.query_start IS NOT NULL AS visible
    FROM pg_catalog.pg_stat_activity AS a
    WHERE a.backend_xmin IS NOT NULL
        AND a.pid <> pg_catalog.pg_backend_pid()
        AND (a.datname = pg_catalog.current_database() OR a.backend_type = 'walsender')
    UNION ALL
    SELECT 'replication_slot'::text, s.slot_name::text, age(s.xmin)::bigint, NULL::bigint,
        NULL::text, NULL::text, CASE WHEN s.active THEN 'active' ELSE 'inactive' END, true
    FROM pg_catalog.pg_replication_slots AS s
    WHERE s.xmin IS NOT NULL
    UNION ALL
    SELECT 'prepared_transaction'::text, p.gid, age(p.transaction)::bigint,
        (extract(epoch FROM now() - p.prepared) * 1000000)::bigint, p.owner::text, NULL::text,
        'prepared', true
    FROM pg_catalog.pg_prepared_xacts AS p
    WHERE p.database = pg_catalog.current_database()
) AS h
ORDER BY h.xmin_age DESC
LIMIT $1::bigint
