-- A JSON API sign-in that gave the right code for an account with a password (docs/security.md,
-- "Two-step verification"): the client got a random single-use password_token and may finish with
-- /v1/auth/checkPassword until `expires_at`. Only the token's SHA-256 is kept. A table of its own,
-- not a row of password_pending_sign_ins under a number derived from the token: that table is
-- keyed by 64-bit MTProto auth key ids, which travel in the clear, so a shared key space would cut
-- the token to 64 bits and let one front's key stand for the other's.
CREATE TABLE password_token_sign_ins (
    token_sha256 BYTEA PRIMARY KEY,
    user_id      BIGINT NOT NULL REFERENCES users (id),
    expires_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX password_token_sign_ins_expires_at ON password_token_sign_ins (expires_at);
