use domain::access_hash::AccessHashKey;
use domain::media::THIS_DC;
use domain::UserId;
use serde::Serialize;

use crate::ports::{ContactRecord, UserPhoto, UserRecord};

/// TL `userProfilePhoto`: the current profile photo as a `user` shows it. A user without one has
/// no `photo` field (the flag unset), as Telegram sends it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "userProfilePhoto")]
pub struct UserProfilePhoto {
    pub photo_id: i64,
    /// Hex, as TL `bytes` are in JSON; absent when the photo has no stripped thumbnail.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stripped_thumb: Option<String>,
    pub dc_id: i32,
}

impl UserProfilePhoto {
    pub fn of(p: &UserPhoto) -> Self {
        Self {
            photo_id: p.id.get(),
            stripped_thumb: (!p.stripped.is_empty()).then(|| hex::encode(&p.stripped)),
            dc_id: THIS_DC,
        }
    }
}

/// TL `user`, as one viewer sees it: the access hash is that viewer's, the phone only for oneself.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "user")]
pub struct User {
    #[serde(rename = "self")]
    pub is_self: bool,
    pub contact: bool,
    pub mutual_contact: bool,
    pub deleted: bool,
    pub id: i64,
    pub access_hash: i64,
    pub first_name: String,
    pub last_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub photo: Option<UserProfilePhoto>,
}

impl User {
    pub fn for_viewer(viewer: UserId, record: &UserRecord, keys: &AccessHashKey) -> Self {
        let is_self = viewer == record.id;
        Self {
            is_self,
            contact: false,
            mutual_contact: false,
            deleted: false,
            id: record.id.get(),
            access_hash: keys.for_pair(viewer, record.id),
            first_name: record.first_name.clone(),
            last_name: record.last_name.clone(),
            phone: is_self.then(|| record.phone.trim_start_matches('+').to_string()),
            photo: record.photo.as_ref().map(UserProfilePhoto::of),
        }
    }

    /// Overlays the viewer's contact entry: its names for the user, `contact`, and `mutual_contact`
    /// when the user has the viewer as a contact too.
    pub fn with_contact(mut self, contact: Option<&ContactRecord>, they_have_viewer: bool) -> Self {
        if let Some(c) = contact {
            self.contact = true;
            self.mutual_contact = they_have_viewer;
            self.first_name = c.first_name.clone();
            self.last_name = c.last_name.clone();
        }
        self
    }
}
