//! `messages.forwardMessages`: copies of the caller's visible private messages into another private
//! chat, in order, each idempotent on its own random_id.

use std::collections::HashSet;

use domain::media::MessageMedia;
use domain::message::ForwardHeader;
use domain::peer::ChatPeer;
use domain::{limits, BoxId, DomainError};
use serde::Deserialize;
use serde_json::Value;

use super::outgoing::{deliver, new_grouped_id, unarchive_for_recipient, Outgoing};
use super::send_options::OutOfScope;
use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::Origin;
use crate::tl::{longs, InputPeer, Message, Update, Updates};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct ForwardMessages {
    #[serde(default)]
    pub silent: bool,
    #[serde(default)]
    pub background: bool,
    #[serde(default)]
    pub with_my_score: bool,
    #[serde(default)]
    pub drop_author: bool,
    #[serde(default)]
    pub drop_media_captions: bool,
    #[serde(default)]
    pub noforwards: bool,
    #[serde(default)]
    pub allow_paid_floodskip: bool,
    pub from_peer: InputPeer,
    pub id: Vec<i64>,
    #[serde(deserialize_with = "longs")]
    pub random_id: Vec<i64>,
    pub to_peer: InputPeer,
    #[serde(default)]
    pub top_msg_id: Option<i32>,
    #[serde(default)]
    pub reply_to: Option<Value>,
    #[serde(default)]
    pub video_timestamp: Option<i32>,
    /// (forwardMessages' TL has no reply_markup; a JSON client sending one is refused too.)
    #[serde(flatten)]
    pub out_of_scope: OutOfScope,
}

impl App {
    pub async fn forward_messages(
        &self,
        caller: &Caller,
        req: ForwardMessages,
    ) -> Result<Updates, AppError> {
        req.out_of_scope.refuse()?;
        if req.top_msg_id.is_some() || req.reply_to.is_some() {
            return Err(DomainError::ReplyMessageIdInvalid.into());
        }
        if req.id.is_empty() {
            return Err(DomainError::MessageIdsEmpty.into());
        }
        if req.id.len() > limits::MAX_FORWARD_IDS {
            return Err(DomainError::MessageIdsTooMuch.into());
        }
        if req.id.len() != req.random_id.len() {
            return Err(DomainError::RandomIdInvalid.into());
        }
        if req.random_id.contains(&0) {
            return Err(DomainError::RandomIdEmpty.into());
        }
        if req.random_id.iter().collect::<HashSet<_>>().len() != req.random_id.len() {
            return Err(DomainError::RandomIdDuplicate.into());
        }
        let ids: Vec<BoxId> = req
            .id
            .iter()
            .map(|raw| BoxId::from_client(*raw).ok_or(DomainError::MessageIdInvalid))
            .collect::<Result<_, _>>()?;
        let sender = caller.user_id;
        let from = self.chat_peer(sender, &req.from_peer)?.user_id(sender);
        let to = self.chat_peer(sender, &req.to_peer)?;
        let to_id = to.user_id(sender);

        self.limiter
            .check_send(sender, ids.len() as u32)
            .await
            .map_err(AppError::FloodWait)?;

        let mut tx = self.store.begin().await?;
        // The source boxes are the caller's own, guarded by the caller's lock; the source chat's
        // other side is not touched, so it is not locked.
        let locked = tx.lock_users(&[sender, to_id]).await?;
        if !locked.contains(&to_id) {
            return Err(DomainError::PeerIdInvalid.into());
        }
        let recipient_gets_it = match to {
            ChatPeer::SelfChat => false,
            ChatPeer::User(other) => {
                if tx.is_blocked(sender, other).await? {
                    return Err(DomainError::YouBlockedUser.into());
                }
                !tx.is_blocked(other, sender).await?
            }
        };

        let sources = tx.messages(sender, &ids).await?;
        if sources.len() != ids.len() || sources.iter().any(|m| m.peer_id != from) {
            return Err(DomainError::MessageIdInvalid.into());
        }
        if sources.iter().any(|m| m.noforwards) {
            return Err(DomainError::ChatForwardsRestricted.into());
        }

        let date = unix_now();
        let origin = Origin::from(caller);
        // Read before the first copy lands (which creates the dialog if there was none).
        let unarchive = recipient_gets_it && tx.archived_unmuted(to_id, sender, date).await?;
        let mut delivered = false;
        let mut updates = Vec::with_capacity(ids.len() * 2);
        let mut mentioned = vec![sender, to_id];
        let mut albums = std::collections::HashMap::new();
        for (source, random_id) in sources.into_iter().zip(req.random_id.iter().copied()) {
            let fwd_from = if req.drop_author {
                None
            } else {
                Some(source.fwd_from.clone().unwrap_or(ForwardHeader {
                    from_id: source.from_id,
                    date: source.date,
                }))
            };
            let (copy, pts) = match tx.find_by_random_id(sender, random_id).await? {
                // Retried forward: answer what the first attempt created. The random_id of another
                // message (another chat, text or origin) is a duplicate, not a retry.
                Some((first, pts))
                    if first.peer_id == to_id
                        && first.text == source.text
                        && first.entities == source.entities
                        && first.fwd_from == fwd_from
                        && first.media.as_deref().map(MessageMedia::id)
                            == source.media.as_deref().map(MessageMedia::id) =>
                {
                    (first, pts)
                }
                Some(_) => return Err(DomainError::RandomIdDuplicate.into()),
                None => {
                    let outgoing = Outgoing {
                        random_id,
                        date,
                        text: source.text,
                        entities: source.entities,
                        silent: req.silent,
                        noforwards: req.noforwards,
                        reply_to: None,
                        fwd_from,
                        // The same photo or document: its bytes are not copied.
                        media: source.media.map(|m| *m),
                        // An album forwarded together is an album again, under a new id.
                        grouped_id: source
                            .grouped_id
                            .map(|g| *albums.entry(g).or_insert_with(new_grouped_id)),
                    };
                    delivered = true;
                    deliver(
                        tx.as_mut(),
                        sender,
                        to_id,
                        outgoing,
                        recipient_gets_it,
                        origin,
                    )
                    .await?
                }
            };
            if let Some(f) = &copy.fwd_from {
                mentioned.push(f.from_id);
            }
            updates.push(Update::MessageId {
                id: copy.id.get(),
                random_id,
            });
            updates.push(Update::NewMessage {
                message: Message::render(&copy, self.file_refs()),
                pts: pts.get(),
                pts_count: 1,
            });
        }
        if unarchive && delivered {
            unarchive_for_recipient(tx.as_mut(), to_id, sender, origin).await?;
        }
        tx.commit().await?;
        let users = self.users_for(sender, mentioned).await?;
        Ok(Updates::Updates {
            updates,
            users,
            chats: Vec::new(),
            date,
            seq: 0,
        })
    }
}
