-- One send's preflight (infrastructure/src/postgres/write_tx.rs, `send_preflight` and
-- `prefetch_send_preflights`): the sender's box with this random_id if it used it before (the
-- columns of rows.rs's BOX_COLUMNS, and its pts), the blocks both ways, whether the peer has the
-- chat archived and unmuted at `now_`, and a fresh message id. A batch of sends (group commit)
-- calls it once per send inside one statement: one round trip for the batch instead of one per
-- send. A function rather than a join of the batch with the tables: each call's statements are
-- planned for one account, so each touches one partition of each table, where a join over the
-- batch opens and locks all sixteen of each. Its columns are spelled out, not the table's row
-- type, which the online rebuild replaces (it swaps in a new message_boxes).
CREATE FUNCTION ptslog_send_preflight(sender bigint, rid bigint, peer bigint, now_ integer)
RETURNS TABLE (
    box_id integer, message_id bigint, peer_user_id bigint, sender_user_id bigint,
    outgoing boolean, random_id bigint, date integer, text text, entities jsonb,
    silent boolean, noforwards boolean, reply_to jsonb, fwd_from jsonb, media_unread boolean,
    edit_date integer, media jsonb, grouped_id bigint, pts integer,
    sender_blocked_peer boolean, peer_blocked_sender boolean, peer_archived_unmuted boolean,
    next_message_id bigint)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY SELECT
        b.box_id, b.message_id, b.peer_user_id, b.sender_user_id, b.outgoing, b.random_id,
        b.date, b.text, b.entities, b.silent, b.noforwards, b.reply_to, b.fwd_from,
        b.media_unread, b.edit_date, b.media, b.grouped_id, b.pts,
        EXISTS (SELECT 1 FROM contact_blocks c
                WHERE c.owner_user_id = sender AND c.blocked_user_id = peer),
        EXISTS (SELECT 1 FROM contact_blocks c
                WHERE c.owner_user_id = peer AND c.blocked_user_id = sender),
        EXISTS (SELECT 1 FROM dialogs d
                WHERE d.user_id = peer AND d.peer_user_id = sender AND d.folder_id = 1
                  AND NOT EXISTS (SELECT 1 FROM notify_settings n
                                  WHERE n.owner_user_id = peer AND n.peer_user_id = sender
                                    AND n.mute_until > now_)),
        nextval('private_message_ids')
    FROM (SELECT 1) AS one
    LEFT JOIN message_boxes b ON b.owner_user_id = sender AND b.random_id = rid;
END
$$;
