-- MTProto auth keys encrypted at rest (docs/security.md, "TLS and secrets at rest"): a key is now
-- stored sealed with AES-256-GCM (version byte, 12-byte nonce, 256-byte ciphertext, 16-byte tag:
-- 285 bytes). Keys stored before stay 256 bytes of plaintext until the server seals them (at start
-- of the MTProto front and on load).
ALTER TABLE mtproto_auth_keys DROP CONSTRAINT mtproto_auth_keys_auth_key_check;
ALTER TABLE mtproto_auth_keys ADD CONSTRAINT mtproto_auth_keys_auth_key_check
    CHECK (length(auth_key) IN (256, 285));
