-- Media on each owner's copy of a message (payload version 2 of new_message / edit_message): the
-- snapshot as sent (`media`, domain::media::MessageMedia, read with the box so no answer joins
-- photos or documents), the id it names and its class (search filters, download access checks),
-- and the album it belongs to. Rows written before have none of them, which is what their events
-- had, so the message_boxes projector's version is unchanged.
ALTER TABLE message_boxes
    ADD COLUMN media       jsonb,
    ADD COLUMN media_id    bigint,
    ADD COLUMN media_class text,
    ADD COLUMN grouped_id  bigint;

-- "May this account download media X": a visible box of the viewer carrying it.
CREATE INDEX message_boxes_media ON message_boxes (owner_user_id, media_id)
    WHERE media_id IS NOT NULL AND NOT deleted;
-- Search with a media filter (inputMessagesFilterPhotos, …): newest first per owner and class.
CREATE INDEX message_boxes_media_class ON message_boxes (owner_user_id, media_class, box_id)
    WHERE media_class IS NOT NULL AND NOT deleted;
