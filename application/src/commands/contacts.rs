//! `contacts.importContacts`, `contacts.addContact`, `contacts.deleteContacts`, `contacts.resetSaved`
//! and `messages.hidePeerSettingsBar`: the owner's contacts (under the owner's names for them) and
//! the action bar of a chat. Each change is an event of the owner's log; the other side's log is
//! untouched. A repeat that changes nothing appends nothing. The phones `contacts.importContacts`
//! looks up count against the owner's phone look-up limit: those past it come back in
//! `retry_contacts`, and a call none of whose phones may be looked up gets `FLOOD_WAIT_X`.

use std::collections::HashSet;

use domain::events::{
    ContactDeleted, ContactSaved, ContactsReset, PeerSettings, PeerSettingsFlags, UserEvent,
};
use domain::{limits, DomainError, UserId};
use serde::Deserialize;

use crate::clock::unix_now;
use crate::commands::login::{check_name, normalize_phone};
use crate::error::AppError;
use crate::ports::{Origin, StoredEvent};
use crate::tl::{
    long, update_for_event, ImportedContact, ImportedContacts, InputPeer, InputUser, Updates,
};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct InputPhoneContact {
    #[serde(deserialize_with = "long")]
    pub client_id: i64,
    pub phone: String,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ImportContacts {
    pub contacts: Vec<InputPhoneContact>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct AddContact {
    #[serde(default)]
    pub add_phone_privacy_exception: bool,
    pub id: InputUser,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: String,
    #[serde(default)]
    pub phone: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DeleteContacts {
    pub id: Vec<InputUser>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct HidePeerSettingsBar {
    pub peer: InputPeer,
}

/// The action bar of a private chat: none with oneself, a contact, or once hidden; otherwise the
/// offer to add, block or report the stranger.
pub(crate) fn peer_settings_flags(
    is_self: bool,
    is_contact: bool,
    bar_hidden: bool,
) -> PeerSettingsFlags {
    if is_self || is_contact || bar_hidden {
        PeerSettingsFlags::default()
    } else {
        PeerSettingsFlags {
            report_spam: true,
            add_contact: true,
            block_contact: true,
        }
    }
}

impl App {
    fn contact_names(&self, first: &str, last: &str) -> Result<(String, String), AppError> {
        let first = check_name(
            first,
            limits::MAX_FIRST_NAME_CODE_POINTS,
            DomainError::FirstNameInvalid,
            false,
        )?;
        let last = check_name(
            last,
            limits::MAX_LAST_NAME_CODE_POINTS,
            DomainError::LastNameInvalid,
            false,
        )?;
        Ok((first, last))
    }

    /// The phones (valid ones, each once) the owner may look up now under its phone look-up
    /// limit; `FLOOD_WAIT_X` when there are some and none may.
    async fn allowed_phone_lookups(
        &self,
        owner: UserId,
        phones: &[Option<String>],
    ) -> Result<HashSet<String>, AppError> {
        let mut distinct: Vec<String> = Vec::new();
        let mut seen = HashSet::new();
        for phone in phones.iter().flatten() {
            if seen.insert(phone.as_str()) {
                distinct.push(phone.clone());
            }
        }
        let flags = self
            .limiter
            .check_phone_lookups(owner, &distinct)
            .await
            .map_err(AppError::FloodWait)?;
        Ok(distinct
            .into_iter()
            .zip(flags)
            .filter_map(|(phone, ok)| ok.then_some(phone))
            .collect())
    }

    /// The `updates` answer of a contact change: one update per appended event.
    async fn contact_updates(
        &self,
        owner: UserId,
        appended: Vec<StoredEvent>,
        users: Vec<UserId>,
    ) -> Result<Updates, AppError> {
        let updates = appended
            .iter()
            .map(|e| update_for_event(e, &self.keys))
            .collect();
        let users = self.users_for(owner, users).await?;
        Ok(Updates::Updates {
            updates,
            users,
            chats: Vec::new(),
            date: unix_now(),
            seq: 0,
        })
    }

    pub async fn import_contacts(
        &self,
        caller: &Caller,
        req: ImportContacts,
    ) -> Result<ImportedContacts, AppError> {
        let owner = caller.user_id;
        if req.contacts.len() > limits::MAX_IMPORT_CONTACTS {
            return Err(DomainError::LimitInvalid.into());
        }
        // Phones of no account are not kept (there is no one to add); invalid phones likewise.
        let phones: Vec<Option<String>> = req
            .contacts
            .iter()
            .map(|c| normalize_phone(&c.phone).ok())
            .collect();
        let allowed = self.allowed_phone_lookups(owner, &phones).await?;
        let mut retry_contacts = Vec::new();
        let mut found: Vec<(i64, ContactSaved)> = Vec::new();
        let date = unix_now();
        for (c, phone) in req.contacts.iter().zip(phones) {
            let Some(phone) = phone else {
                continue;
            };
            if !allowed.contains(&phone) {
                // Past the look-up limit: Telegram's way to say "import this one later".
                retry_contacts.push(c.client_id);
                continue;
            }
            let Some(user) = self.store.user_by_phone(&phone).await? else {
                continue;
            };
            if user.id == owner {
                continue;
            }
            let (mut first, mut last) = self.contact_names(&c.first_name, &c.last_name)?;
            if first.is_empty() {
                first = user.first_name.clone();
                last = user.last_name.clone();
            }
            found.retain(|(_, s)| s.user_id != user.id);
            let saved = ContactSaved {
                user_id: user.id,
                first_name: first,
                last_name: last,
                phone: phone.trim_start_matches('+').to_string(),
                imported: true,
                date,
                settings: PeerSettingsFlags::default(),
            };
            found.push((c.client_id, saved));
        }
        let mut imported = Vec::with_capacity(found.len());
        let mut users = Vec::with_capacity(found.len());
        if !found.is_empty() {
            let mut tx = self.store.begin().await?;
            tx.lock_users(&[owner]).await?;
            for (client_id, saved) in found {
                imported.push(ImportedContact {
                    user_id: saved.user_id.get(),
                    client_id,
                });
                users.push(saved.user_id);
                let old = tx.contact(owner, saved.user_id).await?;
                let unchanged = old.as_ref().is_some_and(|o| {
                    o.imported
                        && o.first_name == saved.first_name
                        && o.last_name == saved.last_name
                        && o.phone == saved.phone
                });
                if !unchanged {
                    tx.append(owner, UserEvent::ContactSaved(saved), Origin::from(caller))
                        .await?;
                }
            }
            tx.commit().await?;
        }
        let users = self.users_for(owner, users).await?;
        Ok(ImportedContacts {
            imported,
            popular_invites: Vec::new(),
            retry_contacts,
            users,
        })
    }

    /// Answers `updates` with `updatePeerSettings` for the user (none if nothing changed).
    pub async fn add_contact(&self, caller: &Caller, req: AddContact) -> Result<Updates, AppError> {
        let owner = caller.user_id;
        let target = match self.input_user(owner, &req.id)? {
            Some(t) if t != owner => t,
            _ => return Err(DomainError::ContactIdInvalid.into()),
        };
        let (first, last) = self.contact_names(&req.first_name, &req.last_name)?;
        if first.is_empty() {
            return Err(DomainError::ContactNameEmpty.into());
        }
        let record = self
            .store
            .users(&[target])
            .await?
            .pop()
            .ok_or(DomainError::ContactIdInvalid)?;
        let phone = if req.phone.trim().is_empty() {
            record.phone.trim_start_matches('+').to_string()
        } else {
            req.phone.trim().trim_start_matches('+').to_string()
        };
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        let old = tx.contact(owner, target).await?;
        let mut appended = Vec::new();
        if !old.is_some_and(|o| o.first_name == first && o.last_name == last && o.phone == phone) {
            let saved = ContactSaved {
                user_id: target,
                first_name: first,
                last_name: last,
                phone,
                imported: false,
                date: unix_now(),
                settings: PeerSettingsFlags::default(),
            };
            let event = UserEvent::ContactSaved(saved);
            let pts = tx
                .append(owner, event.clone(), Origin::from(caller))
                .await?;
            tx.commit().await?;
            appended.push(stored(owner, pts, event, caller));
        }
        self.contact_updates(owner, appended, vec![target]).await
    }

    /// Answers `updates` with `updatePeerSettings` for each deleted contact.
    pub async fn delete_contacts(
        &self,
        caller: &Caller,
        req: DeleteContacts,
    ) -> Result<Updates, AppError> {
        let owner = caller.user_id;
        let mut targets: Vec<UserId> = Vec::new();
        for u in &req.id {
            if let Some(t) = self.input_user(owner, u)? {
                if t != owner && !targets.contains(&t) {
                    targets.push(t);
                }
            }
        }
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        let mut appended = Vec::new();
        for t in &targets {
            if tx.contact(owner, *t).await?.is_none() {
                continue;
            }
            let hidden = tx.peer_bar_hidden(owner, *t).await?;
            let event = UserEvent::ContactDeleted(ContactDeleted {
                user_id: *t,
                settings: peer_settings_flags(false, false, hidden),
            });
            let pts = tx
                .append(owner, event.clone(), Origin::from(caller))
                .await?;
            appended.push(stored(owner, pts, event, caller));
        }
        if !appended.is_empty() {
            tx.commit().await?;
        }
        self.contact_updates(owner, appended, targets).await
    }

    /// Forgets the imported phone book (`saved_count` becomes 0); the contacts stay. Answers `Bool`.
    pub async fn reset_saved_contacts(&self, caller: &Caller) -> Result<bool, AppError> {
        let owner = caller.user_id;
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        // Under the owner's lock nothing of the owner's can commit meanwhile, so the committed rows
        // read through the store are current.
        if !self.store.contacts(owner).await?.iter().any(|c| c.imported) {
            return Ok(true);
        }
        tx.append(
            owner,
            UserEvent::ContactsReset(ContactsReset {}),
            Origin::from(caller),
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Answers `Bool`.
    pub async fn hide_peer_settings_bar(
        &self,
        caller: &Caller,
        req: HidePeerSettingsBar,
    ) -> Result<bool, AppError> {
        let owner = caller.user_id;
        let peer = self.existing_chat_peer(owner, &req.peer).await?;
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        if tx.peer_bar_hidden(owner, peer).await? {
            return Ok(true);
        }
        let event = PeerSettings {
            peer_id: peer,
            bar_hidden: true,
            settings: PeerSettingsFlags::default(),
        };
        tx.append(owner, UserEvent::PeerSettings(event), Origin::from(caller))
            .await?;
        tx.commit().await?;
        Ok(true)
    }
}

fn stored(owner: UserId, pts: domain::Pts, event: UserEvent, caller: &Caller) -> StoredEvent {
    StoredEvent {
        user_id: owner,
        pts,
        pts_count: event.pts_count(),
        event,
        origin: Origin::from(caller),
        date: unix_now(),
    }
}
