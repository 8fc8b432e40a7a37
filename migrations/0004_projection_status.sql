-- Checkpoints of the read models (docs/operations.md): the projector version that built each live
-- table, whether a rebuild is running and how far it got. Written by `ptslog projections rebuild`
-- (a separate process), read by `ptslog projections status`, `GET /admin/projections` and /metrics.
-- Nothing here is written by the inline projectors: a counter bumped by every command would be one
-- hot row every writer waits for.
CREATE TABLE projection_status (
    name                 text PRIMARY KEY,
    -- Projection::version of the code that built the live table; NULL: unknown (rebuild to learn).
    version              integer,
    state                text NOT NULL DEFAULT 'live' CHECK (state IN ('live', 'rebuilding', 'failed')),
    -- Why the last rebuild failed or was aborted (the live table is untouched in both cases).
    error                text,
    -- Events the last rebuild applied before its swap (the inline projectors apply the rest).
    events_applied       bigint NOT NULL DEFAULT 0,
    last_rebuilt_at      timestamptz,
    -- How long the last swap held writers back (user_sequences locked EXCLUSIVE), milliseconds.
    last_lock_ms         double precision,
    -- Progress of the running rebuild.
    rebuild_phase        text,
    rebuild_started_at   timestamptz,
    rebuild_events_done  bigint NOT NULL DEFAULT 0,
    rebuild_events_total bigint NOT NULL DEFAULT 0,
    rebuild_rate         double precision NOT NULL DEFAULT 0,
    updated_at           timestamptz NOT NULL DEFAULT now()
);

-- The tables that exist at this migration were built inline by these projector versions.
INSERT INTO projection_status (name, version) VALUES
    ('message_boxes', 1),
    ('dialogs', 2),
    ('contact_blocks', 1),
    ('dialog_filters', 1),
    ('dialog_filter_settings', 1),
    ('contacts', 1),
    ('peer_settings', 1);
