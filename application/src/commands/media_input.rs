//! From the `InputMedia` a request names to the `MessageMedia` a message carries: an upload
//! becomes a new photo (cut into sizes by the photo processor, off the async workers) or document,
//! every blob stored before anything names it; an existing photo or document is taken only if
//! the caller may see it and presents a live file reference.

use domain::media::limits::FILE_REFERENCE_LIFETIME_SECS;
use domain::media::{
    document_attributes, file_reference, Document, DocumentAttributes, MediaId, MessageMedia,
    Photo, PhotoSize,
};
use domain::DomainError;

use crate::clock::unix_now;
use crate::error::AppError;
use crate::media::{
    BlobError, InputFile, MediaCatalog, MediaMaking, PhotoError, ProcessedPhoto, StoredMedia,
    UploadedFile,
};
use crate::ports::StoreError;
use crate::tl::{InputDocument, InputMedia, InputPhoto};
use crate::{App, Caller};

/// The largest upload made into a photo (Telegram's limit for photos): `PHOTO_FILE_TOO_BIG` above.
pub const MAX_PHOTO_UPLOAD_BYTES: u64 = 10 * 1024 * 1024;
/// The largest thumbnail a document may come with (Telegram's are JPEGs of at most 320 px).
pub const MAX_THUMB_UPLOAD_BYTES: u64 = 200 * 1024;

const _: () = assert!(FILE_REFERENCE_LIFETIME_SECS > 0);

pub(crate) fn blob_failure(e: BlobError) -> AppError {
    AppError::Store(match e {
        BlobError::Missing(key) => StoreError::Corrupt(format!("blob {key} is missing")),
        BlobError::Backend(msg) => StoreError::Database(format!("blob store: {msg}")),
    })
}

fn photo_failure(e: PhotoError) -> AppError {
    match e {
        PhotoError::NotAnImage => DomainError::ImageProcessFailed.into(),
        PhotoError::InvalidDimensions { .. } => DomainError::PhotoInvalidDimensions.into(),
    }
}

impl App {
    pub(crate) fn media_catalog(&self) -> Result<&dyn MediaCatalog, AppError> {
        self.media_catalog
            .as_deref()
            .ok_or(DomainError::MediaInvalid.into())
    }

    fn media_making(&self) -> Result<MediaMaking, AppError> {
        self.media_making
            .clone()
            .ok_or(DomainError::MediaInvalid.into())
    }

    /// The media a message will carry, made or found for `caller`.
    pub(crate) async fn resolve_media(
        &self,
        caller: &Caller,
        media: InputMedia,
    ) -> Result<MessageMedia, AppError> {
        let catalog = self.media_catalog()?;
        match media {
            InputMedia::UploadedPhoto {
                spoiler,
                file,
                ttl_seconds,
                live_photo,
                ..
            } => {
                refuse_ttl(ttl_seconds)?;
                if live_photo {
                    return Err(DomainError::MediaInvalid.into());
                }
                let photo = self.photo_from_upload(caller, &file).await?;
                Ok(MessageMedia::Photo { photo, spoiler })
            }
            InputMedia::UploadedDocument {
                spoiler,
                file,
                thumb,
                mime_type,
                attributes,
                ttl_seconds,
                nosound_video,
                ..
            } => {
                refuse_ttl(ttl_seconds)?;
                let mut attributes = DocumentAttributes::parse(attributes)?;
                if nosound_video {
                    if let Some(v) = attributes.video.as_mut() {
                        v.nosound = true;
                    }
                }
                // The mime type and the file name are checked before any upload is taken.
                let mime = domain::media::document::mime_type(&mime_type)?;
                if attributes.file_name.is_none() && !file.name().is_empty() {
                    attributes.file_name =
                        Some(document_attributes::file_name(file.name().into())?);
                }
                let ports = self.media_making()?;
                let uploaded = self.uploaded_file(caller, &file).await?;
                let (thumbs, stripped) = match thumb {
                    None => (Vec::new(), Vec::new()),
                    Some(t) => {
                        let t = self.uploaded_file(caller, &t).await?;
                        if t.size > MAX_THUMB_UPLOAD_BYTES {
                            return Err(AppError::BadRequest("PHOTO_FILE_TOO_BIG"));
                        }
                        let processed = process(&ports, &t).await?;
                        // A thumbnail is one small size: the largest the processor cut (a
                        // client's thumb is at most 320 px, so `m` at most) is kept as `m`.
                        let mut sizes = processed.sizes;
                        sizes.retain(|s| s.kind == 's' || s.kind == 'm');
                        let best = sizes.pop();
                        let mut stored = store_sizes(&ports, best.into_iter().collect()).await?;
                        for s in &mut stored {
                            s.kind = 'm';
                        }
                        (stored, processed.stripped)
                    }
                };
                let id = catalog.next_media_id().await?;
                let size = i64::try_from(uploaded.size).map_err(|_| DomainError::MediaInvalid)?;
                let document = Document::new(
                    id,
                    rand::random(),
                    unix_now(),
                    &mime,
                    size,
                    uploaded.key,
                    attributes,
                    thumbs,
                    stripped,
                )?;
                catalog.put_document(caller.user_id, &document).await?;
                Ok(MessageMedia::Document { document, spoiler })
            }
            InputMedia::Photo {
                spoiler,
                id,
                ttl_seconds,
                live_photo,
            } => {
                refuse_ttl(ttl_seconds)?;
                if live_photo {
                    return Err(DomainError::MediaInvalid.into());
                }
                let InputPhoto::Photo {
                    id,
                    access_hash,
                    file_reference,
                } = id
                else {
                    return Err(DomainError::MediaEmpty.into());
                };
                let found = self
                    .visible_media(caller, id, access_hash, &file_reference, MediaKind::Photo)
                    .await
                    .map_err(|e| invalid_as(e, DomainError::PhotoInvalid))?;
                match found {
                    StoredMedia::Photo { photo, .. } => Ok(MessageMedia::Photo { photo, spoiler }),
                    StoredMedia::Document { .. } => Err(DomainError::PhotoInvalid.into()),
                }
            }
            InputMedia::Document {
                spoiler,
                id,
                ttl_seconds,
                query,
                ..
            } => {
                refuse_ttl(ttl_seconds)?;
                if query.is_some() {
                    // Sticker queries name sets, which ptslog has none of.
                    return Err(DomainError::MediaInvalid.into());
                }
                let InputDocument::Document {
                    id,
                    access_hash,
                    file_reference,
                } = id
                else {
                    return Err(DomainError::MediaEmpty.into());
                };
                let found = self
                    .visible_media(
                        caller,
                        id,
                        access_hash,
                        &file_reference,
                        MediaKind::Document,
                    )
                    .await
                    .map_err(|e| invalid_as(e, DomainError::DocumentInvalid))?;
                match found {
                    StoredMedia::Document { document, .. } => {
                        Ok(MessageMedia::Document { document, spoiler })
                    }
                    StoredMedia::Photo { .. } => Err(DomainError::DocumentInvalid.into()),
                }
            }
        }
    }

    /// A new photo made of the caller's upload: cut into sizes by the photo processor off the
    /// async workers, every size stored, then recorded in the catalogue as the caller's. A media
    /// message's photo and a profile photo are made here alike.
    pub(crate) async fn photo_from_upload(
        &self,
        caller: &Caller,
        file: &InputFile,
    ) -> Result<Photo, AppError> {
        let catalog = self.media_catalog()?;
        let ports = self.media_making()?;
        let uploaded = self.uploaded_file(caller, file).await?;
        if uploaded.size > MAX_PHOTO_UPLOAD_BYTES {
            return Err(AppError::BadRequest("PHOTO_FILE_TOO_BIG"));
        }
        let processed = process(&ports, &uploaded).await?;
        let sizes = store_sizes(&ports, processed.sizes).await?;
        let id = catalog.next_media_id().await?;
        let photo = Photo::new(id, rand::random(), unix_now(), sizes, processed.stripped)?;
        catalog.put_photo(caller.user_id, &photo).await?;
        Ok(photo)
    }

    /// A photo or document by the id and access hash a client presents, if the caller may see it
    /// (it uploaded it, or has a message carrying it) and the file reference is live. An unknown
    /// id, a wrong hash and media the caller may not see are one answer, `FILE_ID_INVALID`, so
    /// nothing tells a stranger which ids exist.
    pub(crate) async fn visible_media(
        &self,
        caller: &Caller,
        id: i64,
        access_hash: i64,
        reference_hex: &str,
        kind: MediaKind,
    ) -> Result<StoredMedia, AppError> {
        let catalog = self.media_catalog()?;
        let id = MediaId::new(id).ok_or(DomainError::FileIdInvalid)?;
        let found = match kind {
            MediaKind::Photo => catalog.photo(id).await?,
            MediaKind::Document => catalog.document(id).await?,
        };
        let hash = match &found {
            Some(StoredMedia::Photo { photo, .. }) => photo.access_hash,
            Some(StoredMedia::Document { document, .. }) => document.access_hash,
            None => return Err(DomainError::FileIdInvalid.into()),
        };
        if hash != access_hash || !catalog.visible_to(caller.user_id, id).await? {
            return Err(DomainError::FileIdInvalid.into());
        }
        let reference = hex::decode(reference_hex).unwrap_or_default();
        file_reference::check(&self.keys, id, &reference, unix_now())
            .map_err(|_| DomainError::FileReferenceExpired)?;
        found.ok_or(DomainError::FileIdInvalid.into())
    }

    /// The upload an `InputFile` names, put together and stored (upload.saveFilePart's work,
    /// h/files' `take_upload`).
    async fn uploaded_file(
        &self,
        caller: &Caller,
        file: &InputFile,
    ) -> Result<UploadedFile, AppError> {
        self.take_upload(caller, file).await
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MediaKind {
    Photo,
    Document,
}

/// `FILE_ID_INVALID` from [`App::visible_media`] is, in a message's media, the media's own error.
fn invalid_as(e: AppError, as_: DomainError) -> AppError {
    match e {
        AppError::Domain(DomainError::FileIdInvalid) => as_.into(),
        other => other,
    }
}

/// Self-destructing media is not kept apart from other media yet: refused rather than kept forever.
fn refuse_ttl(ttl_seconds: Option<i32>) -> Result<(), AppError> {
    match ttl_seconds {
        None | Some(0) => Ok(()),
        Some(_) => Err(AppError::BadRequest("TTL_MEDIA_INVALID")),
    }
}

/// Reads an upload (bounded by its caller's size check) and cuts it into sizes on the blocking
/// pool: decoding a 10 MB JPEG takes tens of milliseconds of CPU an async worker must not spend.
async fn process(ports: &MediaMaking, file: &UploadedFile) -> Result<ProcessedPhoto, AppError> {
    let len = u32::try_from(file.size).map_err(|_| AppError::BadRequest("PHOTO_FILE_TOO_BIG"))?;
    let bytes = ports
        .blobs
        .read_range(&file.key, 0, len)
        .await
        .map_err(blob_failure)?;
    let processor = ports.photos.clone();
    tokio::task::spawn_blocking(move || processor.process(&bytes))
        .await
        .map_err(|e| AppError::Store(StoreError::Bug(format!("photo processing panicked: {e}"))))?
        .map_err(photo_failure)
}

/// Stores every cut size in the blob store (each complete once `put` returns) and answers them as
/// the photo's sizes.
async fn store_sizes(
    ports: &MediaMaking,
    sizes: Vec<crate::media::PhotoSizeImage>,
) -> Result<Vec<PhotoSize>, AppError> {
    let mut out = Vec::with_capacity(sizes.len());
    for s in sizes {
        let len = s.jpeg.len() as i64;
        let (w, h) = (
            i32::try_from(s.width).map_err(|_| DomainError::PhotoInvalidDimensions)?,
            i32::try_from(s.height).map_err(|_| DomainError::PhotoInvalidDimensions)?,
        );
        let key = ports.blobs.put(s.jpeg).await.map_err(blob_failure)?;
        out.push(PhotoSize::new(s.kind, w, h, len, key)?);
    }
    Ok(out)
}
