//! `photos.uploadProfilePhoto`, `photos.updateProfilePhoto` and `photos.deletePhotos`: the
//! caller's own profile photos. Each change is one `profile_photo_changed` event in the owner's
//! log (docs/media.md, "Profile photos"); the `profile_photos` read model folds it in the same
//! transaction. An upload is made into a photo (cut by the photo processor off the async workers,
//! every size stored) before the transaction, as messages.sendMedia makes its media.

use domain::events::{ProfilePhotoChanged, UserEvent};
use domain::media::limits::MAX_DELETE_PHOTOS;
use domain::media::{profile_photos, MediaId, Photo};
use domain::DomainError;
use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::clock::unix_now;
use crate::error::AppError;
use crate::media::InputFile;
use crate::ports::{Origin, UserPhoto, WriteTx};
use crate::tl::{
    AnyPhoto, FileRefs, InputPhoto, InputUser, PhotoEmpty, PhotosPhoto, TlPhoto, UserProfilePhoto,
};
use crate::{App, Caller};

#[derive(Debug, Clone, Deserialize)]
pub struct UploadProfilePhoto {
    /// The photo shown to those who may not see the main one: not kept apart (refused).
    #[serde(default)]
    pub fallback: bool,
    /// A bot's photo: ptslog has no bots.
    #[serde(default)]
    pub bot: Option<InputUser>,
    #[serde(default)]
    pub file: Option<InputFile>,
    /// Video profile photos are not made (refused).
    #[serde(default)]
    pub video: Option<IgnoredAny>,
    #[serde(default)]
    pub video_start_ts: Option<f64>,
    #[serde(default)]
    pub video_emoji_markup: Option<IgnoredAny>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct UpdateProfilePhoto {
    #[serde(default)]
    pub fallback: bool,
    #[serde(default)]
    pub bot: Option<InputUser>,
    pub id: InputPhoto,
}

#[derive(Debug, Clone, Deserialize)]
pub struct DeletePhotos {
    pub id: Vec<InputPhoto>,
}

/// What ptslog does not keep of a profile photo: fallback photos, bots' photos, videos.
fn refuse_unsupported(fallback: bool, bot: Option<&InputUser>) -> Result<(), AppError> {
    if bot.is_some() {
        return Err(AppError::BadRequest("BOT_INVALID"));
    }
    if fallback {
        return Err(DomainError::PhotoInvalid.into());
    }
    Ok(())
}

/// The caller's photo an `InputPhoto` names: one of its profile photos with the right access hash,
/// else `None`.
fn own_photo<'a>(photos: &'a [Photo], input: &InputPhoto) -> Option<&'a Photo> {
    match input {
        InputPhoto::Photo {
            id, access_hash, ..
        } => photos
            .iter()
            .find(|p| p.id.get() == *id && p.access_hash == *access_hash),
        InputPhoto::Empty {} => None,
    }
}

impl App {
    pub async fn upload_profile_photo(
        &self,
        caller: &Caller,
        req: UploadProfilePhoto,
    ) -> Result<PhotosPhoto, AppError> {
        refuse_unsupported(req.fallback, req.bot.as_ref())?;
        if req.video.is_some() || req.video_emoji_markup.is_some() {
            return Err(AppError::BadRequest("VIDEO_FILE_INVALID"));
        }
        let file = req.file.ok_or(AppError::BadRequest("PHOTO_FILE_MISSING"))?;
        let photo = self.photo_from_upload(caller, &file).await?;
        let owner = caller.user_id;
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        append_change(&mut *tx, caller, Some(photo.clone()), Vec::new()).await?;
        tx.commit().await?;
        self.photo_answer(caller, Some(&photo)).await
    }

    /// Makes one of the caller's photos current; `inputPhotoEmpty` deletes the current one (the
    /// one before it becomes current, as with deletePhotos). Another account's photo, or a wrong
    /// access hash, is `PHOTO_INVALID`.
    pub async fn update_profile_photo(
        &self,
        caller: &Caller,
        req: UpdateProfilePhoto,
    ) -> Result<PhotosPhoto, AppError> {
        refuse_unsupported(req.fallback, req.bot.as_ref())?;
        let owner = caller.user_id;
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        let photos = tx.profile_photos(owner).await?;
        let now_current = match &req.id {
            InputPhoto::Empty {} => {
                let Some(current) = photos.first() else {
                    // Nothing to remove: the answer is what is (no photo).
                    return self.photo_answer(caller, None).await;
                };
                let ids: Vec<MediaId> = photos.iter().map(|p| p.id).collect();
                match profile_photos::delete(&ids, &[current.id]) {
                    Some(d) => {
                        let next = find(&photos, d.current);
                        append_change(&mut *tx, caller, next.clone(), d.removed).await?;
                        next
                    }
                    None => None,
                }
            }
            input => {
                let photo = own_photo(&photos, input).ok_or(DomainError::PhotoInvalid)?;
                if photos.first().map(|p| p.id) != Some(photo.id) {
                    append_change(&mut *tx, caller, Some(photo.clone()), Vec::new()).await?;
                }
                Some(photo.clone())
            }
        };
        tx.commit().await?;
        self.photo_answer(caller, now_current.as_ref()).await
    }

    /// Deletes those of the caller's photos the ids name (with their access hashes); others'
    /// photos and unknown ids are left out of the answer, the ids of the photos deleted. More than
    /// [`MAX_DELETE_PHOTOS`] ids is `LIMIT_INVALID`.
    pub async fn delete_photos(
        &self,
        caller: &Caller,
        req: DeletePhotos,
    ) -> Result<Vec<i64>, AppError> {
        if req.id.len() > MAX_DELETE_PHOTOS {
            return Err(DomainError::LimitInvalid.into());
        }
        let owner = caller.user_id;
        let mut tx = self.store.begin().await?;
        tx.lock_users(&[owner]).await?;
        let photos = tx.profile_photos(owner).await?;
        let named: Vec<MediaId> = req
            .id
            .iter()
            .filter_map(|input| own_photo(&photos, input).map(|p| p.id))
            .collect();
        let ids: Vec<MediaId> = photos.iter().map(|p| p.id).collect();
        let Some(deletion) = profile_photos::delete(&ids, &named) else {
            return Ok(Vec::new());
        };
        let deleted: Vec<i64> = deletion.removed.iter().map(|id| id.get()).collect();
        let current = find(&photos, deletion.current);
        append_change(&mut *tx, caller, current, deletion.removed).await?;
        tx.commit().await?;
        Ok(deleted)
    }

    /// `photos.photo` with the caller's own `user` showing `photo`, the photo now current (set
    /// on the user read, which a lagging read replica could answer from before the change).
    async fn photo_answer(
        &self,
        caller: &Caller,
        photo: Option<&Photo>,
    ) -> Result<PhotosPhoto, AppError> {
        let mut users = self.users_for(caller.user_id, [caller.user_id]).await?;
        for u in &mut users {
            u.photo = photo.map(|p| UserProfilePhoto::of(&UserPhoto::of(p)));
        }
        let photo = match photo {
            Some(p) => AnyPhoto::Photo(TlPhoto::of(p, FileRefs::now(&self.keys))),
            None => AnyPhoto::Empty(PhotoEmpty { id: 0 }),
        };
        Ok(PhotosPhoto { photo, users })
    }
}

fn find(photos: &[Photo], id: Option<MediaId>) -> Option<Photo> {
    id.and_then(|id| photos.iter().find(|p| p.id == id).cloned())
}

async fn append_change(
    tx: &mut dyn WriteTx,
    caller: &Caller,
    photo: Option<Photo>,
    removed: Vec<MediaId>,
) -> Result<(), AppError> {
    let event = ProfilePhotoChanged {
        photo,
        removed,
        date: unix_now(),
    };
    tx.append(
        caller.user_id,
        UserEvent::ProfilePhotoChanged(event),
        Origin::from(caller),
    )
    .await?;
    Ok(())
}
