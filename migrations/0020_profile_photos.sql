-- Profile photos (issue 12): a read model written only by its projector from the owner's
-- `profile_photo_changed` events (docs/events.md). One row per photo the owner has and has not
-- deleted; the current photo is the row set last (highest `set_pts`). `photo` is the event's
-- snapshot (domain::media::Photo as JSON), so users are rendered without a catalogue join.
CREATE TABLE profile_photos (
    owner_user_id bigint  NOT NULL,
    photo_id      bigint  NOT NULL,
    set_pts       integer NOT NULL,
    photo         jsonb   NOT NULL,
    PRIMARY KEY (owner_user_id, photo_id)
);

CREATE INDEX profile_photos_current ON profile_photos (owner_user_id, set_pts DESC);

-- Built inline by this projector version from the start (see 0004_projection_status.sql).
INSERT INTO projection_status (name, version) VALUES ('profile_photos', 1) ON CONFLICT (name) DO NOTHING;
