-- Pending uploads (docs/media.md, "Uploads"): the files an account is uploading in parts
-- (upload.saveFilePart / saveBigFilePart) and the parts saved so far. The bytes are staged in the
-- blob store's staging area; these rows say which staged write holds each part. `file_id` is the
-- client's random id, meaningful only with its account. A file untouched for the pending lifetime
-- is swept; one already put together keeps its blob here for that long, so a retried send
-- naming it gets the same blob.
CREATE TABLE upload_files (
    user_id     BIGINT NOT NULL REFERENCES users (id),
    file_id     BIGINT NOT NULL,
    -- NULL: saveFilePart (a small file); else saveBigFilePart's file_total_parts.
    total_parts INT CHECK (total_parts BETWEEN 1 AND 4000),
    -- The bytes of its recorded parts (what counts against the account's quota).
    bytes       BIGINT NOT NULL DEFAULT 0 CHECK (bytes >= 0),
    touched_at  TIMESTAMPTZ NOT NULL,
    -- Set once put together (its parts are gone then).
    blob_key    BYTEA CHECK (octet_length(blob_key) = 32),
    blob_size   BIGINT,
    PRIMARY KEY (user_id, file_id)
);
CREATE INDEX upload_files_touched_at ON upload_files (touched_at);

CREATE TABLE upload_parts (
    user_id BIGINT NOT NULL,
    file_id BIGINT NOT NULL,
    part    INT NOT NULL CHECK (part BETWEEN 0 AND 3999),
    size    INT NOT NULL CHECK (size BETWEEN 1 AND 524288),
    -- The staged write holding its bytes (a re-sent part is a new write).
    nonce   BIGINT NOT NULL,
    PRIMARY KEY (user_id, file_id, part),
    FOREIGN KEY (user_id, file_id) REFERENCES upload_files (user_id, file_id) ON DELETE CASCADE
);
