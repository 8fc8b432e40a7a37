use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::media::{MediaId, Photo};

/// The owner's profile photo is now `photo` (a snapshot, as messages carry theirs), or none
/// (`photos.deletePhotos` of the last one); `removed` are gone from its photos. Logged in the owner's log so its other devices learn of
/// it through getDifference; the read model of current photos (`profile_photos`) folds these.
/// TL: `updateUser {user_id: owner}`, the client then reads the user with its `userProfilePhoto`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProfilePhotoChanged {
    /// `None`: the owner has no profile photo any more.
    pub photo: Option<Photo>,
    /// Photos the owner deleted (`photos.deletePhotos`): no longer among its profile photos.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub removed: Vec<MediaId>,
    /// Unix seconds.
    pub date: i32,
}

impl EventKind for ProfilePhotoChanged {
    const KIND: &'static str = "profile_photo_changed";
    const VERSION: i16 = 1;
}
