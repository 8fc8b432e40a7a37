-- Photos and documents (docs/media.md, "The model"): each made once, from bytes already complete in
-- the blob store, and named by messages through the snapshot in their payload. These rows are the
-- catalogue `inputMediaPhoto` / `inputMediaDocument` and downloads resolve ids through: who uploaded
-- it (visibility is that account, or a message the viewer still has that carries it) and the whole
-- object as JSON (domain::media::Photo / Document). Never changed once written.
CREATE SEQUENCE media_ids;

CREATE TABLE photos (
    id            bigint PRIMARY KEY CHECK (id > 0),
    access_hash   bigint NOT NULL,
    owner_user_id bigint NOT NULL REFERENCES users (id),
    photo         jsonb  NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX photos_owner ON photos (owner_user_id);

CREATE TABLE documents (
    id            bigint PRIMARY KEY CHECK (id > 0),
    access_hash   bigint NOT NULL,
    owner_user_id bigint NOT NULL REFERENCES users (id),
    mime_type     text   NOT NULL,
    size          bigint NOT NULL CHECK (size >= 0),
    document      jsonb  NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX documents_owner ON documents (owner_user_id);
