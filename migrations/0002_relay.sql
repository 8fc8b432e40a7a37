-- The relay streams the committed log out of Postgres by logical replication (docs/architecture.md,
-- "Live pushes"). Only inserts: the log is append-only. Rows inserted into any hash partition are
-- published as rows of the parent, so the relay sees one table whatever the partitioning.
-- The replication slot is not created here: it needs wal_level=logical, and migrations must also
-- run on a server without it (the relay creates the slot when it starts, and says why it cannot).
CREATE PUBLICATION ptslog_events FOR TABLE user_update_events
    WITH (publish = 'insert', publish_via_partition_root = true);
