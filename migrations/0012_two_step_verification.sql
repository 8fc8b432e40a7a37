-- Two-step verification (docs/security.md, "Two-step verification"): Telegram's SRP.
-- Only the client's verifier v = g^x mod p and the salts it was made with are kept, never the
-- password; `version` changes with every set/change/remove so a check started before a change
-- is refused (SRP_PASSWORD_CHANGED).
CREATE TABLE account_passwords (
    user_id     BIGINT PRIMARY KEY REFERENCES users (id),
    salt1       BYTEA NOT NULL,
    salt2       BYTEA NOT NULL,
    verifier    BYTEA NOT NULL,
    hint        TEXT NOT NULL DEFAULT '',
    email       TEXT,
    version     BIGINT NOT NULL,
    updated_at  TIMESTAMPTZ NOT NULL DEFAULT now()
);

-- One SRP exchange per account.getPassword: the server's secret b, single-use (deleted when a
-- check takes it), short-lived, and at most a few per account (the oldest by `seq` dropped).
CREATE TABLE srp_exchanges (
    srp_id      BIGINT PRIMARY KEY,
    seq         BIGINT GENERATED ALWAYS AS IDENTITY,
    user_id     BIGINT NOT NULL REFERENCES users (id),
    secret_b    BYTEA NOT NULL,
    version     BIGINT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL
);
CREATE INDEX srp_exchanges_user ON srp_exchanges (user_id);
CREATE INDEX srp_exchanges_expires_at ON srp_exchanges (expires_at);

-- Wrong passwords per account, counted over a sliding window (the attempt limit).
CREATE TABLE password_failures (
    user_id     BIGINT NOT NULL REFERENCES users (id),
    failed_at   TIMESTAMPTZ NOT NULL
);
CREATE INDEX password_failures_user ON password_failures (user_id, failed_at);

-- An MTProto auth key that gave the right sign-in code for an account with a password: it may
-- finish the sign-in with auth.checkPassword until `expires_at`.
CREATE TABLE password_pending_sign_ins (
    auth_key_id BIGINT PRIMARY KEY,
    user_id     BIGINT NOT NULL REFERENCES users (id),
    expires_at  TIMESTAMPTZ NOT NULL
);
