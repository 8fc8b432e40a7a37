-- MTProto auth keys (docs/mtproto.md). One row per key a client created with the key exchange; a
-- signed-in key points at the device (`authorizations`) it stands for. Temporary keys
-- (p_q_inner_data_temp) expire and, once bound with auth.bindTempAuthKey, act for their permanent key.
CREATE TABLE mtproto_auth_keys (
    auth_key_id      bigint PRIMARY KEY,
    auth_key         bytea NOT NULL CHECK (length(auth_key) = 256),
    server_salt      bigint NOT NULL,
    expires_at       timestamptz,
    perm_auth_key_id bigint,
    authorization_id bigint REFERENCES authorizations (auth_key_id) ON DELETE SET NULL,
    created_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX mtproto_auth_keys_authorization ON mtproto_auth_keys (authorization_id);
