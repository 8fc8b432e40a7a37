-- Per-chat notification settings (issue 5, mute): a read model written only by its projector from
-- the owner's `notify_settings` events (docs/events.md). A row exists only for chats with at least
-- one field set; NULL = not set (the client's default).
CREATE TABLE notify_settings (
    owner_user_id bigint  NOT NULL,
    peer_user_id  bigint  NOT NULL,
    show_previews boolean,
    silent        boolean,
    mute_until    integer,
    PRIMARY KEY (owner_user_id, peer_user_id)
) PARTITION BY HASH (owner_user_id);

DO $$
DECLARE
    i int;
    parts constant int := 16;
BEGIN
    FOR i IN 0 .. parts - 1 LOOP
        EXECUTE format('CREATE TABLE notify_settings_p%s PARTITION OF notify_settings FOR VALUES WITH (MODULUS %s, REMAINDER %s)', i, parts, i);
    END LOOP;
END
$$;

-- Built inline by this projector version from the start (see 0004_projection_status.sql).
INSERT INTO projection_status (name, version) VALUES ('notify_settings', 1) ON CONFLICT (name) DO NOTHING;
