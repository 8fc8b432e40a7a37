-- The periodic sweep of expired temporary MTProto keys (PgMtprotoKeys::delete_expired) finds them
-- through this index instead of scanning every key.
CREATE INDEX mtproto_auth_keys_expires_at ON mtproto_auth_keys (expires_at) WHERE expires_at IS NOT NULL;
