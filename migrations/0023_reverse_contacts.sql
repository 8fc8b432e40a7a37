-- Read model: who has each account in their contacts (issue 16). The keys of `contacts`, partitioned
-- by the contact instead of the owner, so that "does this account have me" and "who has me" read one
-- partition. Asked of `contacts` (partitioned by owner) through the index contacts_reverse, each such
-- test opened and initialized an index scan on all 16 partitions: about 40 µs of every answer that
-- lists users (their `mutual_contact`), docs/performance.md "Reverse contacts".
--
-- Written by its own projector from the owner's `contact_saved` / `contact_deleted` events, like
-- every read model: a row belongs to `owner_user_id`, the account whose log holds the event, so a
-- per-account repair or verify stays exact (the owner index serves them).
CREATE TABLE reverse_contacts (
    contact_user_id bigint NOT NULL,
    owner_user_id   bigint NOT NULL,
    PRIMARY KEY (contact_user_id, owner_user_id)
) PARTITION BY HASH (contact_user_id);

CREATE INDEX reverse_contacts_owner ON reverse_contacts (owner_user_id);

DO $$
DECLARE
    i int;
    parts constant int := 16;
BEGIN
    FOR i IN 0 .. parts - 1 LOOP
        EXECUTE format('CREATE TABLE reverse_contacts_p%s PARTITION OF reverse_contacts FOR VALUES WITH (MODULUS %s, REMAINDER %s)', i, parts, i);
    END LOOP;
END
$$;

-- Filled from the contacts as they are: the same rows the projector would have written from the
-- log. SHARE mode holds off writers to contacts (a server still running the previous version) until
-- this migration commits; one that writes a contact after it leaves a row `projections verify`
-- reports and `projections rebuild reverse_contacts` writes (docs/operations.md, "Upgrading").
LOCK TABLE contacts IN SHARE MODE;
INSERT INTO reverse_contacts (contact_user_id, owner_user_id)
    SELECT contact_user_id, owner_user_id FROM contacts;

-- Nothing reads contacts by contact any more.
DROP INDEX contacts_reverse;

-- Built by this projector version from the start (see 0004_projection_status.sql).
INSERT INTO projection_status (name, version) VALUES ('reverse_contacts', 1) ON CONFLICT (name) DO NOTHING;
