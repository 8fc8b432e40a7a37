//! Putting one new private message into its owners' boxes: the part `sendMessage`,
//! `sendMedia`, `sendMultiMedia` and `forwardMessages` share.

use domain::events::{FolderPeer, FolderPeers, NewMessage, UserEvent};
use domain::media::MessageMedia;
use domain::message::{ForwardHeader, OwnerMessage, ReplyHeader};
use domain::{DomainError, MessageId, Pts, UserId};

use super::send_message::ReplyRequest;
use crate::error::AppError;
use crate::ports::{Origin, WriteTx};

/// What the sender wants delivered.
pub(crate) struct Outgoing {
    pub random_id: i64,
    pub date: i32,
    pub text: String,
    pub entities: Vec<domain::message_entity::MessageEntity>,
    pub silent: bool,
    pub noforwards: bool,
    /// The reply in the sender's ids, with the shared id of the replied-to message.
    pub reply_to: Option<(ReplyHeader, MessageId)>,
    pub fwd_from: Option<ForwardHeader>,
    /// The photo or document (`text` is then its caption, possibly empty).
    pub media: Option<MessageMedia>,
    /// The album, for the items of one `messages.sendMultiMedia`.
    pub grouped_id: Option<i64>,
}

/// Appends the message to the sender's box and, unless `recipient_gets_it` is false (the recipient
/// blocked the sender) or it is Saved Messages, to the recipient's. Both accounts must be locked.
/// Answers the sender's copy and the pts of its event.
pub(crate) async fn deliver(
    tx: &mut dyn WriteTx,
    sender: UserId,
    peer: UserId,
    msg: Outgoing,
    recipient_gets_it: bool,
    origin: Origin,
) -> Result<(OwnerMessage, Pts), AppError> {
    let message_id = tx.next_message_id().await?;
    let sender_copy = OwnerMessage {
        id: tx.next_box_id(sender)?,
        message_id,
        peer_id: peer,
        from_id: sender,
        out: true,
        date: msg.date,
        text: msg.text.clone(),
        entities: msg.entities.clone(),
        silent: msg.silent,
        noforwards: msg.noforwards,
        reply_to: msg.reply_to.as_ref().map(|(h, _)| h.clone()),
        fwd_from: msg.fwd_from.clone(),
        media_unread: false,
        random_id: Some(msg.random_id),
        edit_date: None,
        media: msg.media.clone().map(Box::new),
        grouped_id: msg.grouped_id,
    };
    let pts = tx
        .append(
            sender,
            UserEvent::NewMessage(NewMessage {
                message: sender_copy.clone(),
            }),
            origin,
        )
        .await?;

    if peer != sender && recipient_gets_it {
        // The recipient sees the reply in its own ids; if it no longer has the replied-to message,
        // the reply header is left out rather than leaking the sender's id.
        let reply_to = match &msg.reply_to {
            Some((header, shared)) => {
                tx.message_by_shared_id(peer, *shared)
                    .await?
                    .map(|m| ReplyHeader {
                        reply_to_msg_id: m.id,
                        ..header.clone()
                    })
            }
            None => None,
        };
        let recipient_copy = OwnerMessage {
            id: tx.next_box_id(peer)?,
            message_id,
            peer_id: sender,
            from_id: sender,
            out: false,
            date: msg.date,
            text: msg.text,
            entities: msg.entities,
            silent: msg.silent,
            noforwards: msg.noforwards,
            reply_to,
            fwd_from: msg.fwd_from,
            // Voice and round video notes stay unread for the recipient until it plays them.
            media_unread: msg
                .media
                .as_ref()
                .is_some_and(MessageMedia::unread_for_recipient),
            random_id: None,
            edit_date: None,
            media: msg.media.map(Box::new),
            grouped_id: msg.grouped_id,
        };
        tx.append(
            peer,
            UserEvent::NewMessage(NewMessage {
                message: recipient_copy,
            }),
            origin,
        )
        .await?;
    }
    Ok((sender_copy, pts))
}

/// A message arrived in a chat the recipient archived and did not mute: like Telegram (unless the
/// account keeps unmuted chats archived, which ptslog has no setting for), the chat moves back to
/// the recipient's main list, as an event of its log (`updateFolderPeers`) so every device of the
/// recipient learns it. Appended after the message's own event.
pub(crate) async fn unarchive_for_recipient(
    tx: &mut dyn WriteTx,
    recipient: UserId,
    sender: UserId,
    origin: Origin,
) -> Result<(), AppError> {
    let event = UserEvent::FolderPeers(FolderPeers {
        folder_peers: vec![FolderPeer {
            peer_id: sender,
            folder_id: 0,
        }],
    });
    tx.append(recipient, event, origin).await?;
    Ok(())
}

/// A new album id: random and positive, so ids of different senders' albums never meet.
pub(crate) fn new_grouped_id() -> i64 {
    (rand::random::<i64>() & i64::MAX).max(1)
}

/// The reply in the sender's ids, checked against its box, with the replied-to message's shared id.
pub(crate) async fn reply_header(
    tx: &mut dyn WriteTx,
    sender: UserId,
    peer: UserId,
    r: &ReplyRequest,
) -> Result<(ReplyHeader, MessageId), AppError> {
    let target = tx
        .messages(sender, &[r.reply_to_msg_id])
        .await?
        .into_iter()
        .find(|m| m.peer_id == peer)
        .ok_or(DomainError::ReplyMessageIdInvalid)?;
    Ok((
        ReplyHeader {
            reply_to_msg_id: target.id,
            quote_text: r.quote_text.as_ref().map(|q| q.as_str().to_string()),
            quote_entities: r.quote_entities.clone().into_vec(),
            quote_offset: r.quote_offset,
        },
        target.message_id,
    ))
}
