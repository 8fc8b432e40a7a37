//! `messages.updateDialogFilter`, `messages.updateDialogFiltersOrder`,
//! `messages.toggleDialogFilterTags`: the account's custom dialog filters (folders), their order and
//! folder tags. Each is its own read model (`dialog_filters`, `dialog_filter_settings`), not a
//! `folder_id` of the dialogs. A repeat that changes nothing appends nothing.

use domain::events::{
    DialogFilter, DialogFilterOrder, DialogFilterRules, DialogFilterTags, UserEvent,
};
use domain::{limits, DomainError, UserId};
use serde::Deserialize;
use serde_json::Value;

use crate::error::AppError;
use crate::ports::Origin;
use crate::tl::InputPeer;
use crate::{App, Caller};

/// A title as a plain string or a `textWithEntities`.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum TitleInput {
    Plain(String),
    Text {
        text: String,
        #[serde(default)]
        entities: Vec<Value>,
    },
}

#[derive(Debug, Clone, Deserialize)]
pub struct DialogFilterInput {
    #[serde(default)]
    pub contacts: bool,
    #[serde(default)]
    pub non_contacts: bool,
    #[serde(default)]
    pub groups: bool,
    #[serde(default)]
    pub broadcasts: bool,
    #[serde(default)]
    pub bots: bool,
    #[serde(default)]
    pub exclude_muted: bool,
    #[serde(default)]
    pub exclude_read: bool,
    #[serde(default)]
    pub exclude_archived: bool,
    #[serde(default)]
    pub title_noanimate: bool,
    pub title: TitleInput,
    #[serde(default)]
    pub emoticon: Option<String>,
    #[serde(default)]
    pub color: Option<i32>,
    #[serde(default)]
    pub pinned_peers: Vec<InputPeer>,
    #[serde(default)]
    pub include_peers: Vec<InputPeer>,
    #[serde(default)]
    pub exclude_peers: Vec<InputPeer>,
}

/// TL `DialogFilter` in a request.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "_")]
pub enum InputDialogFilter {
    #[serde(rename = "dialogFilter")]
    Filter(DialogFilterInput),
    #[serde(rename = "dialogFilterDefault")]
    Default {},
    #[serde(rename = "dialogFilterChatlist")]
    Chatlist {},
}

#[derive(Debug, Clone, Deserialize)]
pub struct UpdateDialogFilter {
    pub id: i32,
    #[serde(default)]
    pub filter: Option<InputDialogFilter>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct UpdateDialogFiltersOrder {
    pub order: Vec<i32>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct ToggleDialogFilterTags {
    pub enabled: bool,
}

impl App {
    fn filter_peers(
        &self,
        owner: UserId,
        peers: &[InputPeer],
        out: &mut Vec<UserId>,
    ) -> Result<(), AppError> {
        for p in peers {
            let id = self.chat_peer(owner, p)?.user_id(owner);
            if !out.contains(&id) {
                out.push(id);
            }
        }
        Ok(())
    }

    /// The rules a request defines, checked against Telegram's limits.
    fn filter_rules(
        &self,
        owner: UserId,
        id: i32,
        f: &DialogFilterInput,
    ) -> Result<DialogFilterRules, AppError> {
        let (title, raw_entities) = match &f.title {
            TitleInput::Plain(t) => (t.trim().to_string(), Vec::new()),
            TitleInput::Text { text, entities } => (text.trim().to_string(), entities.clone()),
        };
        let title_len = title.chars().count();
        if title_len == 0
            || title_len > limits::MAX_DIALOG_FILTER_TITLE_CODE_POINTS
            || title.chars().any(char::is_control)
        {
            return Err(DomainError::FilterTitleEmpty.into());
        }
        // Entities are checked against the title as stored (trimmed), in UTF-16 code units.
        let title_entities = self
            .entities(owner, raw_entities, title.encode_utf16().count())?
            .into_vec();
        let emoticon = f.emoticon.clone().filter(|e| !e.is_empty());
        if let Some(e) = &emoticon {
            if e.chars().count() > limits::MAX_DIALOG_FILTER_EMOTICON_CODE_POINTS
                || e.chars().any(char::is_control)
            {
                return Err(DomainError::EmoticonInvalid.into());
            }
        }
        let mut pinned = Vec::new();
        self.filter_peers(owner, &f.pinned_peers, &mut pinned)?;
        let mut include = Vec::new();
        self.filter_peers(owner, &f.include_peers, &mut include)?;
        include.retain(|p| !pinned.contains(p));
        let mut exclude = Vec::new();
        self.filter_peers(owner, &f.exclude_peers, &mut exclude)?;
        if pinned.len() + include.len() > limits::MAX_DIALOG_FILTER_PEERS
            || exclude.len() > limits::MAX_DIALOG_FILTER_PEERS
        {
            return Err(DomainError::FilterIncludeTooMuch.into());
        }
        let rules = DialogFilterRules {
            id,
            title,
            title_entities,
            emoticon,
            color: f.color,
            contacts: f.contacts,
            non_contacts: f.non_contacts,
            groups: f.groups,
            broadcasts: f.broadcasts,
            bots: f.bots,
            exclude_muted: f.exclude_muted,
            exclude_read: f.exclude_read,
            exclude_archived: f.exclude_archived,
            title_noanimate: f.title_noanimate,
            pinned_peers: pinned,
            include_peers: include,
            exclude_peers: exclude,
        };
        if !rules.includes_something() {
            return Err(DomainError::FilterIncludeEmpty.into());
        }
        Ok(rules)
    }

    /// Creates, replaces (`filter` given) or deletes (`filter` absent) filter `id`. Answers `Bool`.
    pub async fn update_dialog_filter(
        &self,
        caller: &Caller,
        req: UpdateDialogFilter,
    ) -> Result<bool, AppError> {
        let owner = caller.user_id;
        if req.id < 2 {
            return Err(DomainError::FilterIdInvalid.into());
        }
        let rules = match &req.filter {
            None => None,
            Some(InputDialogFilter::Filter(f)) => Some(self.filter_rules(owner, req.id, f)?),
            // Shared chat lists are not supported; the default filter cannot be stored.
            Some(InputDialogFilter::Default {}) | Some(InputDialogFilter::Chatlist {}) => {
                return Err(DomainError::FilterIdInvalid.into())
            }
        };
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        let set = tx.dialog_filters(owner).await?;
        let existing = set.filters.iter().find(|f| f.id == req.id);
        match (&rules, existing) {
            (None, None) => return Ok(true),
            (Some(new), Some(old)) if new == old => return Ok(true),
            (Some(_), None) if set.filters.len() >= limits::MAX_DIALOG_FILTERS => {
                return Err(DomainError::DialogFiltersTooMuch.into())
            }
            _ => {}
        }
        let event = DialogFilter {
            id: req.id,
            filter: rules,
        };
        tx.append(owner, UserEvent::DialogFilter(event), Origin::from(caller))
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Answers `Bool`. Every id must be one of the account's filters (or 0, "All chats"), once.
    pub async fn update_dialog_filters_order(
        &self,
        caller: &Caller,
        req: UpdateDialogFiltersOrder,
    ) -> Result<bool, AppError> {
        let owner = caller.user_id;
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        let set = tx.dialog_filters(owner).await?;
        for (i, id) in req.order.iter().enumerate() {
            let known = *id == 0 || set.filters.iter().any(|f| f.id == *id);
            if !known || req.order[..i].contains(id) {
                return Err(DomainError::FilterIdInvalid.into());
            }
        }
        if req.order == set.order {
            return Ok(true);
        }
        let event = DialogFilterOrder { order: req.order };
        tx.append(
            owner,
            UserEvent::DialogFilterOrder(event),
            Origin::from(caller),
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Answers `Bool`.
    pub async fn toggle_dialog_filter_tags(
        &self,
        caller: &Caller,
        req: ToggleDialogFilterTags,
    ) -> Result<bool, AppError> {
        let owner = caller.user_id;
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        if tx.dialog_filters(owner).await?.tags_enabled == req.enabled {
            return Ok(true);
        }
        let event = DialogFilterTags {
            enabled: req.enabled,
        };
        tx.append(
            owner,
            UserEvent::DialogFilterTags(event),
            Origin::from(caller),
        )
        .await?;
        tx.commit().await?;
        Ok(true)
    }
}
