//! `messages.sendMessage`: a private text message, optionally a reply, idempotent on
//! (sender, random_id).

use domain::entities::Entities;
use domain::message_text::{MessageText, QuoteText};
use domain::peer::ChatPeer;
use domain::{limits, BoxId, DomainError, UserId};
use serde::Deserialize;
use serde_json::Value;

use super::batched_write::Write;
use super::outgoing::{deliver, reply_header, unarchive_for_recipient, Outgoing};
use super::send_options::SendOptions;
use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::{Origin, SendPreflight, WriteTx};
use crate::tl::{long, InputPeer, InputReplyTo, Updates};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct SendMessage {
    #[serde(default)]
    pub no_webpage: bool,
    pub peer: InputPeer,
    pub message: String,
    #[serde(deserialize_with = "long")]
    pub random_id: i64,
    #[serde(default)]
    pub entities: Option<Vec<Value>>,
    #[serde(flatten)]
    pub options: SendOptions,
}

/// A reply as the sender asked for it, checked for shape but not yet against the sender's box.
#[derive(Debug, Clone)]
pub(crate) struct ReplyRequest {
    pub reply_to_msg_id: BoxId,
    pub quote_text: Option<QuoteText>,
    pub quote_entities: Entities,
    pub quote_offset: Option<i32>,
}

/// Checks an `InputReplyTo` for a private chat with `peer`.
pub(crate) fn parse_reply(
    app: &App,
    caller: &Caller,
    peer: ChatPeer,
    reply: &InputReplyTo,
) -> Result<ReplyRequest, AppError> {
    match reply {
        InputReplyTo::Story {} => Err(DomainError::StoryIdInvalid.into()),
        InputReplyTo::MonoForum {} => Err(DomainError::ReplyToMonoforumPeerInvalid.into()),
        InputReplyTo::Message {
            reply_to_msg_id,
            top_msg_id,
            reply_to_peer_id,
            quote_text,
            quote_entities,
            quote_offset,
            monoforum_peer_id,
            todo_item_id,
        } => {
            if monoforum_peer_id.is_some() {
                return Err(DomainError::ReplyToMonoforumPeerInvalid.into());
            }
            if todo_item_id.is_some() {
                return Err(DomainError::PollOptionInvalid.into());
            }
            if top_msg_id.is_some() {
                // Topics exist only in forums.
                return Err(DomainError::ReplyMessageIdInvalid.into());
            }
            if let Some(other) = reply_to_peer_id {
                // Cross-chat replies are refused; naming the same chat is fine.
                if app.chat_peer(caller.user_id, other)? != peer {
                    return Err(DomainError::ReplyMessageIdInvalid.into());
                }
            }
            let reply_to_msg_id =
                BoxId::new(*reply_to_msg_id).ok_or(DomainError::ReplyMessageIdInvalid)?;
            let quote_text = quote_text.clone().map(QuoteText::parse).transpose()?;
            let quote_entities = match (&quote_text, quote_entities) {
                (Some(q), Some(raw)) => app.entities(caller.user_id, raw.clone(), q.utf16_len())?,
                (None, Some(raw)) if !raw.is_empty() => {
                    return Err(DomainError::EntityBoundsInvalid.into())
                }
                _ => Entities::empty(),
            };
            if let Some(offset) = quote_offset {
                if !(0..=limits::MAX_QUOTE_OFFSET).contains(offset) {
                    return Err(DomainError::QuoteOffsetInvalid.into());
                }
            }
            Ok(ReplyRequest {
                reply_to_msg_id,
                quote_text,
                quote_entities,
                quote_offset: *quote_offset,
            })
        }
    }
}

/// A send checked and counted against the rate limit, waiting for its transaction: everything
/// [`send_locked`] needs, so it can run alone or in a batch (commands::send_batch).
#[derive(Debug, Clone)]
pub(crate) struct PreparedSend {
    pub sender: UserId,
    pub peer: ChatPeer,
    pub peer_id: UserId,
    pub random_id: i64,
    pub text: MessageText,
    pub entities: Entities,
    pub silent: bool,
    pub noforwards: bool,
    pub reply: Option<ReplyRequest>,
    pub origin: Origin,
}

impl App {
    pub async fn send_message(
        &self,
        caller: &Caller,
        req: SendMessage,
    ) -> Result<Updates, AppError> {
        req.options.out_of_scope.refuse()?;
        let text = MessageText::parse(req.message)?;
        let entities = self.entities(
            caller.user_id,
            req.entities.unwrap_or_default(),
            text.utf16_len(),
        )?;
        if req.random_id == 0 {
            return Err(DomainError::RandomIdEmpty.into());
        }
        let peer = self.chat_peer(caller.user_id, &req.peer)?;
        let reply = req
            .options
            .reply_to
            .as_ref()
            .map(|r| parse_reply(self, caller, peer, r))
            .transpose()?;

        let sender = caller.user_id;
        let peer_id = peer.user_id(sender);
        // Counted before the transaction: no database lock is ever held across a Redis round trip.
        self.limiter
            .check_send(sender, 1)
            .await
            .map_err(AppError::FloodWait)?;

        let send = PreparedSend {
            sender,
            peer,
            peer_id,
            random_id: req.random_id,
            text,
            entities,
            silent: req.options.silent,
            noforwards: req.options.noforwards,
            reply,
            origin: Origin::from(caller),
        };
        self.write(Write::Send(send)).await?.sent()
    }
}

/// The send's work inside a transaction that has locked its two accounts (alone, or with a batch's
/// other accounts, all in one ascending statement); the caller commits. A retry of a send that
/// committed — or that ran earlier in the same batch — gets the first answer and appends nothing.
pub(crate) async fn send_locked(
    tx: &mut dyn WriteTx,
    send: &PreparedSend,
) -> Result<Updates, AppError> {
    let (sender, peer_id) = (send.sender, send.peer_id);
    // Already locked: this only tells whether the peer exists.
    let locked = tx.lock_users(&[sender, peer_id]).await?;
    if !locked.contains(&peer_id) {
        return Err(DomainError::PeerIdInvalid.into());
    }

    // The random_id lookup and the block checks are one round trip (send_preflight).
    let date = unix_now();
    let checks = match tx
        .send_preflight(sender, peer_id, send.random_id, date)
        .await?
    {
        SendPreflight::New(checks) => checks,
        SendPreflight::Retry(first, pts) => {
            // A forwarded copy is another message, even with the same text.
            if first.peer_id != peer_id
                || first.text != send.text.as_str()
                || first.fwd_from.is_some()
                || first.media.is_some()
            {
                return Err(DomainError::RandomIdDuplicate.into());
            }
            return Ok(Updates::ShortSentMessage {
                out: true,
                id: first.id.get(),
                pts: pts.get(),
                pts_count: 1,
                date: first.date,
                entities: Vec::new(),
            });
        }
    };
    let recipient_gets_it = checks.recipient_gets_it(send.peer)?;
    let reply_to = match &send.reply {
        Some(r) => Some(reply_header(tx, sender, peer_id, r).await?),
        None => None,
    };

    let outgoing = Outgoing {
        random_id: send.random_id,
        date,
        text: send.text.as_str().to_string(),
        entities: send.entities.clone().into_vec(),
        silent: send.silent,
        noforwards: send.noforwards,
        reply_to,
        fwd_from: None,
        media: None,
        grouped_id: None,
    };
    let (sent, pts) = deliver(
        tx,
        sender,
        peer_id,
        outgoing,
        recipient_gets_it,
        send.origin,
    )
    .await?;
    if checks.unarchives(recipient_gets_it) {
        unarchive_for_recipient(tx, peer_id, sender, send.origin).await?;
    }
    Ok(Updates::ShortSentMessage {
        out: true,
        id: sent.id.get(),
        pts: pts.get(),
        pts_count: 1,
        date: sent.date,
        entities: Vec::new(),
    })
}
