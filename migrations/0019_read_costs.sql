-- Reads as cheap as the database allows (issue 16, docs/performance.md "Reads").
--
-- 1. `dialogs.message_count`: the visible messages of each chat, kept by the dialogs projector
--    (version 3: +1 per new message, recounted from the boxes after a deletion), so getHistory no
--    longer counts the whole chat on every call. Filled here exactly as the projector would have
--    written it, so the live table is what version 3 builds and no rebuild is due.
ALTER TABLE dialogs ADD COLUMN message_count integer NOT NULL DEFAULT 0;

UPDATE dialogs d SET message_count = c.n
FROM (SELECT owner_user_id, peer_user_id, count(*)::int AS n FROM message_boxes
      WHERE NOT deleted GROUP BY owner_user_id, peer_user_id) c
WHERE d.user_id = c.owner_user_id AND d.peer_user_id = c.peer_user_id;

UPDATE projection_status SET version = 3 WHERE name = 'dialogs' AND version = 2;

-- 2. Every change that can refuse a bearer token (the device's row deleted, its token, owner or
--    end changed — by the application or by hand) is announced on this channel, once the change
--    commits, to every instance's cache of token → caller (payload `<user_id>:<auth_key_id>`).
--    `record_device` updates `active_at` on every initConnection: not announced.
CREATE FUNCTION ptslog_authorization_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('ptslog_authorization_revoked', OLD.user_id || ':' || OLD.auth_key_id);
    RETURN NULL;
END
$$;

CREATE TRIGGER authorizations_revoked_on_delete AFTER DELETE ON authorizations
    FOR EACH ROW EXECUTE FUNCTION ptslog_authorization_revoked();

CREATE TRIGGER authorizations_revoked_on_update AFTER UPDATE ON authorizations
    FOR EACH ROW
    WHEN (OLD.token_hash IS DISTINCT FROM NEW.token_hash
          OR OLD.user_id IS DISTINCT FROM NEW.user_id
          OR OLD.expires_at IS DISTINCT FROM NEW.expires_at)
    EXECUTE FUNCTION ptslog_authorization_revoked();
