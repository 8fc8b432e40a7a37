//! `messages.sendMedia`, `messages.sendMultiMedia` and `messages.uploadMedia`: private messages
//! carrying a photo or document, through the same boxes, log, pushes and getDifference as text
//! (commands::outgoing). Idempotent on (sender, random_id) like sendMessage; an album's items share
//! one `grouped_id`. The media is made (blobs stored, photo cut) before the transaction, so no lock
//! is held while a photo is processed and no event names a blob that is not complete.

use domain::entities::Entities;
use domain::media::limits::MAX_ALBUM_ITEMS;
use domain::media::Caption;
use domain::message::OwnerMessage;
use domain::{DomainError, Pts};
use serde::Deserialize;
use serde_json::Value;

use super::outgoing::{deliver, new_grouped_id, reply_header, unarchive_for_recipient, Outgoing};
use super::send_message::parse_reply;
use super::send_options::SendOptions;
use crate::clock::unix_now;
use crate::error::AppError;
use crate::ports::{Origin, SendPreflight};
use crate::tl::{
    long, users_of_message, InputMedia, InputPeer, InputReplyTo, InputSingleMedia, MediaRequest,
    Message, TlMessageMedia, Update, Updates,
};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct SendMedia {
    pub peer: InputPeer,
    pub media: Value,
    #[serde(default)]
    pub message: String,
    #[serde(deserialize_with = "long")]
    pub random_id: i64,
    #[serde(default)]
    pub entities: Option<Vec<Value>>,
    #[serde(flatten)]
    pub options: SendOptions,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SendMultiMedia {
    pub peer: InputPeer,
    pub multi_media: Vec<InputSingleMedia>,
    #[serde(flatten)]
    pub options: SendOptions,
}

#[derive(Debug, Clone, Deserialize)]
pub struct UploadMedia {
    #[serde(default)]
    pub business_connection_id: Option<String>,
    pub peer: InputPeer,
    pub media: Value,
}

/// One message of a send, checked.
struct Item {
    random_id: i64,
    caption: Caption,
    entities: Entities,
    media: InputMedia,
}

/// What every item of one send shares.
struct Common {
    peer: InputPeer,
    reply_to: Option<InputReplyTo>,
    silent: bool,
    noforwards: bool,
    album: bool,
}

impl App {
    pub async fn send_media(&self, caller: &Caller, req: SendMedia) -> Result<Updates, AppError> {
        req.options.out_of_scope.refuse()?;
        let item = self.item(caller, req.media, req.message, req.entities, req.random_id)?;
        let common = Common {
            peer: req.peer,
            reply_to: req.options.reply_to,
            silent: req.options.silent,
            noforwards: req.options.noforwards,
            album: false,
        };
        self.send_items(caller, common, vec![item]).await
    }

    pub async fn send_multi_media(
        &self,
        caller: &Caller,
        req: SendMultiMedia,
    ) -> Result<Updates, AppError> {
        req.options.out_of_scope.refuse()?;
        if req.multi_media.is_empty() {
            return Err(DomainError::MediaEmpty.into());
        }
        if req.multi_media.len() > MAX_ALBUM_ITEMS {
            return Err(DomainError::MultiMediaTooLong.into());
        }
        let mut items = Vec::with_capacity(req.multi_media.len());
        for m in req.multi_media {
            let item = self.item(caller, m.media, m.message, m.entities, m.random_id)?;
            if items.iter().any(|i: &Item| i.random_id == item.random_id) {
                return Err(DomainError::RandomIdDuplicate.into());
            }
            items.push(item);
        }
        let common = Common {
            peer: req.peer,
            reply_to: req.options.reply_to,
            silent: req.options.silent,
            noforwards: req.options.noforwards,
            album: true,
        };
        self.send_items(caller, common, items).await
    }

    /// Makes the media of an upload (or checks an existing one) without sending it: what a client
    /// then sends by id, e.g. as items of an album. TL: `MessageMedia`.
    pub async fn upload_media(
        &self,
        caller: &Caller,
        req: UploadMedia,
    ) -> Result<TlMessageMedia, AppError> {
        if req.business_connection_id.is_some() {
            return Err(AppError::BadRequest("CONNECTION_ID_INVALID"));
        }
        // The chat must be one the caller can reach, as for a send.
        self.chat_peer(caller.user_id, &req.peer)?;
        let MediaRequest::Media(media) = MediaRequest::parse(req.media)? else {
            return Err(DomainError::MediaEmpty.into());
        };
        let media = self.resolve_media(caller, media).await?;
        Ok(TlMessageMedia::of(&media, self.file_refs()))
    }

    fn item(
        &self,
        caller: &Caller,
        media: Value,
        message: String,
        entities: Option<Vec<Value>>,
        random_id: i64,
    ) -> Result<Item, AppError> {
        let caption = Caption::parse(message)?;
        let entities = self.entities(
            caller.user_id,
            entities.unwrap_or_default(),
            caption.utf16_len(),
        )?;
        if random_id == 0 {
            return Err(DomainError::RandomIdEmpty.into());
        }
        let MediaRequest::Media(media) = MediaRequest::parse(media)? else {
            return Err(DomainError::MediaEmpty.into());
        };
        Ok(Item {
            random_id,
            caption,
            entities,
            media,
        })
    }

    async fn send_items(
        &self,
        caller: &Caller,
        common: Common,
        items: Vec<Item>,
    ) -> Result<Updates, AppError> {
        let sender = caller.user_id;
        let peer = self.chat_peer(sender, &common.peer)?;
        let peer_id = peer.user_id(sender);
        let reply = common
            .reply_to
            .as_ref()
            .map(|r| parse_reply(self, caller, peer, r))
            .transpose()?;
        self.limiter
            .check_send(sender, items.len() as u32)
            .await
            .map_err(AppError::FloodWait)?;

        // A retry of a send that committed answers what it created and makes no media: looked up
        // first, under the locks, so an upload a retry names (already taken) is never read again.
        {
            let mut tx = self.store.begin().await?;
            let locked = tx.lock_users(&[sender, peer_id]).await?;
            if !locked.contains(&peer_id) {
                return Err(DomainError::PeerIdInvalid.into());
            }
            if let Some(answer) = self.retried(tx.as_mut(), sender, peer_id, &items).await? {
                return Ok(answer);
            }
        }

        // Made outside any transaction: each blob is complete and catalogued before the event
        // that names it is appended.
        let mut made = Vec::with_capacity(items.len());
        for item in items {
            let media = self.resolve_media(caller, item.media).await?;
            made.push((item.random_id, item.caption, item.entities, media));
        }

        let mut tx = self.store.begin().await?;
        let locked = tx.lock_users(&[sender, peer_id]).await?;
        if !locked.contains(&peer_id) {
            return Err(DomainError::PeerIdInvalid.into());
        }
        let date = unix_now();
        let first_random_id = made[0].0;
        let checks = match tx
            .send_preflight(sender, peer_id, first_random_id, date)
            .await?
        {
            SendPreflight::New(checks) => checks,
            // Committed by a concurrent retry meanwhile: its media stays unused.
            SendPreflight::Retry(..) => return Err(DomainError::RandomIdDuplicate.into()),
        };
        for (random_id, ..) in &made[1..] {
            if tx.find_by_random_id(sender, *random_id).await?.is_some() {
                return Err(DomainError::RandomIdDuplicate.into());
            }
        }
        let recipient_gets_it = checks.recipient_gets_it(peer)?;
        let reply_to = match &reply {
            Some(r) => Some(reply_header(tx.as_mut(), sender, peer_id, r).await?),
            None => None,
        };
        let grouped_id = common.album.then(new_grouped_id);
        let origin = Origin::from(caller);
        let mut sent = Vec::with_capacity(made.len());
        for (random_id, caption, entities, media) in made {
            let outgoing = Outgoing {
                random_id,
                date,
                text: caption.into_string(),
                entities: entities.into_vec(),
                silent: common.silent,
                noforwards: common.noforwards,
                reply_to: reply_to.clone(),
                fwd_from: None,
                media: Some(media),
                grouped_id,
            };
            let (copy, pts) = deliver(
                tx.as_mut(),
                sender,
                peer_id,
                outgoing,
                recipient_gets_it,
                origin,
            )
            .await?;
            sent.push((copy, pts));
        }
        if checks.unarchives(recipient_gets_it) {
            unarchive_for_recipient(tx.as_mut(), peer_id, sender, origin).await?;
        }
        tx.commit().await?;
        self.sent_answer(sender, sent, date).await
    }

    /// The first answer again when every item's random_id was used by this same send; a random_id
    /// used by something else is `RANDOM_ID_DUPLICATE`.
    async fn retried(
        &self,
        tx: &mut dyn crate::ports::WriteTx,
        sender: domain::UserId,
        peer: domain::UserId,
        items: &[Item],
    ) -> Result<Option<Updates>, AppError> {
        let mut found = Vec::with_capacity(items.len());
        for item in items {
            match tx.find_by_random_id(sender, item.random_id).await? {
                Some((first, pts))
                    if first.peer_id == peer
                        && first.media.is_some()
                        && first.fwd_from.is_none()
                        && first.text == item.caption.as_str() =>
                {
                    found.push((first, pts))
                }
                Some(_) => return Err(DomainError::RandomIdDuplicate.into()),
                None => {}
            }
        }
        if found.is_empty() {
            return Ok(None);
        }
        if found.len() != items.len() {
            return Err(DomainError::RandomIdDuplicate.into());
        }
        let date = found[0].0.date;
        Ok(Some(self.sent_answer(sender, found, date).await?))
    }

    /// `updates` with, per message, `updateMessageID` and `updateNewMessage` (what clients match
    /// their random_id with, and where they find the media the server made).
    async fn sent_answer(
        &self,
        sender: domain::UserId,
        sent: Vec<(OwnerMessage, Pts)>,
        date: i32,
    ) -> Result<Updates, AppError> {
        let refs = self.file_refs();
        let users = self
            .users_for(sender, sent.iter().flat_map(|(m, _)| users_of_message(m)))
            .await?;
        let mut updates = Vec::with_capacity(sent.len() * 2);
        for (m, pts) in &sent {
            updates.push(Update::MessageId {
                id: m.id.get(),
                random_id: m.random_id.unwrap_or_default(),
            });
            updates.push(Update::NewMessage {
                message: Message::render(m, refs),
                pts: pts.get(),
                pts_count: 1,
            });
        }
        Ok(Updates::Updates {
            updates,
            users,
            chats: Vec::new(),
            date,
            seq: 0,
        })
    }
}
