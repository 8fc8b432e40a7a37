-- Sign-in codes (auth.sendCode / POST /v1/auth/sendCode): one row per phone_code_hash, with its
-- expiry and tries, kept for every instance. Rows also count the codes sent per phone and per
-- requester (an HTTP client's IP, an MTProto auth key) for the flood limits, and a dead hash
-- (too many wrong codes) locks its phone and requester out for a while (application::login_codes).
CREATE TABLE login_codes (
    phone_code_hash text PRIMARY KEY,
    phone           text NOT NULL,
    requester       text NOT NULL,
    code            text NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    expires_at      timestamptz NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    -- sent: waiting for the code; verified: right code, waiting for sign-up; closed: used or
    -- cancelled; dead: too many wrong codes.
    state           text NOT NULL DEFAULT 'sent' CHECK (state IN ('sent', 'verified', 'closed', 'dead')),
    dead_at         timestamptz,
    -- Codes sent for this hash (auth.sendCode and each auth.resendCode), for the send limits.
    sends           integer NOT NULL DEFAULT 1,
    last_sent_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX login_codes_phone ON login_codes (phone, last_sent_at);
CREATE INDEX login_codes_requester ON login_codes (requester, last_sent_at);
-- For deleting rows past every window (PgCodeStore::issue).
CREATE INDEX login_codes_last_sent_at ON login_codes (last_sent_at);

-- The first migration made access_hash_key from md5(random()), which is not a CSPRNG. On a
-- database that has not handed out a single access hash yet (no account), drop it: the server
-- then stores 32 bytes from the operating system's CSPRNG at start
-- (infrastructure::postgres::secrets). A database with accounts keeps its key, since changing it
-- would invalidate every access_hash clients hold (docs/security.md, "Sign-in codes").
DELETE FROM server_secrets
WHERE name = 'access_hash_key' AND NOT EXISTS (SELECT 1 FROM users);
