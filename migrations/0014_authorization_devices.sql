-- Sessions and devices (docs/security.md, "Sessions and devices"): what `initConnection` said about
-- each device (lengths capped by the server, `DEVICE_FIELD_MAX_CHARS`), the client's address, when
-- it was last seen, and when its bearer token stops working (`TOKEN_LIFETIME`). Rows from before
-- get a lifetime counted from now.
ALTER TABLE authorizations
    ADD COLUMN device_model   text NOT NULL DEFAULT '',
    ADD COLUMN platform       text NOT NULL DEFAULT '',
    ADD COLUMN system_version text NOT NULL DEFAULT '',
    ADD COLUMN app_version    text NOT NULL DEFAULT '',
    ADD COLUMN lang_code      text NOT NULL DEFAULT '',
    ADD COLUMN api_id         integer NOT NULL DEFAULT 0,
    ADD COLUMN ip             text NOT NULL DEFAULT '',
    ADD COLUMN active_at      timestamptz NOT NULL DEFAULT now(),
    ADD COLUMN expires_at     timestamptz NOT NULL DEFAULT now() + interval '180 days';
