-- Dialog organization (issue 5): pins, archive and manual unread live on `dialogs`; custom dialog
-- filters, their order and tags, contacts and peer settings are read models of their own. Every one
-- is written only by its projector from the owner's log (docs/events.md).

-- NULL = not pinned; otherwise the position in the pinned list of the dialog's folder (ascending;
-- a new pin takes one less than the smallest, so it goes on top).
ALTER TABLE dialogs ADD COLUMN pinned_order integer;
CREATE INDEX dialogs_pinned ON dialogs (user_id, folder_id, pinned_order) WHERE pinned_order IS NOT NULL;
CREATE INDEX dialogs_unread_mark ON dialogs (user_id) WHERE unread_mark;

-- Read model: each owner's custom dialog filters (ids from 2), as the rules of the last event.
CREATE TABLE dialog_filters (
    user_id   bigint  NOT NULL,
    filter_id integer NOT NULL CHECK (filter_id >= 2),
    filter    jsonb   NOT NULL,
    PRIMARY KEY (user_id, filter_id)
) PARTITION BY HASH (user_id);

-- Read model: the order of each owner's filters and whether folder tags are on.
CREATE TABLE dialog_filter_settings (
    user_id      bigint    NOT NULL,
    filter_order integer[] NOT NULL DEFAULT '{}',
    tags_enabled boolean   NOT NULL DEFAULT false,
    PRIMARY KEY (user_id)
) PARTITION BY HASH (user_id);

-- Read model: each owner's contacts, under the owner's names for them.
CREATE TABLE contacts (
    owner_user_id   bigint  NOT NULL,
    contact_user_id bigint  NOT NULL,
    first_name      text    NOT NULL,
    last_name       text    NOT NULL DEFAULT '',
    phone           text    NOT NULL DEFAULT '',
    imported        boolean NOT NULL DEFAULT false,
    date            integer NOT NULL,
    PRIMARY KEY (owner_user_id, contact_user_id)
) PARTITION BY HASH (owner_user_id);
-- "Who has me as a contact" (mutual_contact): a lookup by the other side.
CREATE INDEX contacts_reverse ON contacts (contact_user_id, owner_user_id);

-- Read model: per-chat peer settings the owner changed (today: the hidden action bar).
CREATE TABLE peer_settings (
    owner_user_id bigint  NOT NULL,
    peer_user_id  bigint  NOT NULL,
    bar_hidden    boolean NOT NULL DEFAULT false,
    PRIMARY KEY (owner_user_id, peer_user_id)
) PARTITION BY HASH (owner_user_id);

DO $$
DECLARE
    i int;
    parts constant int := 16;
BEGIN
    FOR i IN 0 .. parts - 1 LOOP
        EXECUTE format('CREATE TABLE dialog_filters_p%s PARTITION OF dialog_filters FOR VALUES WITH (MODULUS %s, REMAINDER %s)', i, parts, i);
        EXECUTE format('CREATE TABLE dialog_filter_settings_p%s PARTITION OF dialog_filter_settings FOR VALUES WITH (MODULUS %s, REMAINDER %s)', i, parts, i);
        EXECUTE format('CREATE TABLE contacts_p%s PARTITION OF contacts FOR VALUES WITH (MODULUS %s, REMAINDER %s)', i, parts, i);
        EXECUTE format('CREATE TABLE peer_settings_p%s PARTITION OF peer_settings FOR VALUES WITH (MODULUS %s, REMAINDER %s)', i, parts, i);
    END LOOP;
END
$$;
