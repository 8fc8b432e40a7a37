//! `photos.getUserPhotos`: a user's profile photos, current first, paged as Telegram pages them
//! (domain::media::profile_photos::page). Anyone who can name the user may list them.

use domain::media::{profile_photos, MediaId};
use domain::DomainError;
use serde::Deserialize;

use crate::error::AppError;
use crate::tl::{long, FileRefs, InputUser, PhotosPage, TlPhoto};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct GetUserPhotos {
    pub user_id: InputUser,
    #[serde(default)]
    pub offset: i32,
    #[serde(default, deserialize_with = "long")]
    pub max_id: i64,
    pub limit: i32,
}

impl App {
    /// `USER_ID_INVALID` for `inputUserEmpty` and accounts that do not exist; a wrong access hash
    /// is `PEER_ID_INVALID`, as everywhere.
    pub async fn get_user_photos(
        &self,
        caller: &Caller,
        req: GetUserPhotos,
    ) -> Result<PhotosPage, AppError> {
        let viewer = caller.user_id;
        let user = self
            .input_user(viewer, &req.user_id)?
            .ok_or(DomainError::UserIdInvalid)?;
        let users = self.users_for(viewer, [user]).await?;
        if users.is_empty() {
            return Err(DomainError::UserIdInvalid.into());
        }
        let photos = self.store.profile_photos(user).await?;
        let ids: Vec<MediaId> = photos.iter().map(|p| p.id).collect();
        let range = profile_photos::page(&ids, req.offset, req.max_id, req.limit);
        let whole = range.start == 0 && range.end == photos.len();
        let refs = FileRefs::now(&self.keys);
        let page: Vec<TlPhoto> = photos[range].iter().map(|p| TlPhoto::of(p, refs)).collect();
        Ok(if whole {
            PhotosPage::All {
                photos: page,
                users,
            }
        } else {
            PhotosPage::Slice {
                count: photos.len() as i32,
                photos: page,
                users,
            }
        })
    }
}
