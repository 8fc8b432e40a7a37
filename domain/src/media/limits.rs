//! Media's named limits (docs/media.md, "Limits"). Each has a test at its boundary where it is
//! enforced.

/// A caption (the text of a media message), as Telegram has it: `MEDIA_CAPTION_TOO_LONG` above.
pub const MAX_CAPTION_CODE_POINTS: usize = 1024;
/// Items of one album (`messages.sendMultiMedia`): `MULTI_MEDIA_TOO_LONG` above.
pub const MAX_ALBUM_ITEMS: usize = 10;
/// A document's mime type (RFC 6838 allows 127 + 1 + 127 bytes).
pub const MAX_MIME_TYPE_BYTES: usize = 255;
/// A document's file name.
pub const MAX_FILE_NAME_CODE_POINTS: usize = 255;
/// An audio's title or performer.
pub const MAX_AUDIO_TEXT_CODE_POINTS: usize = 128;
/// A voice note's waveform: Telegram's is 100 samples of 5 bits, 63 bytes.
pub const MAX_WAVEFORM_BYTES: usize = 128;
/// A sticker's alternative emoji.
pub const MAX_STICKER_ALT_CODE_POINTS: usize = 16;
/// A video's codec name.
pub const MAX_VIDEO_CODEC_BYTES: usize = 32;
/// Attributes of one document as the client sends them (one of each kind makes 6).
pub const MAX_DOCUMENT_ATTRIBUTES: usize = 16;
/// Widths and heights a client may claim, in pixels.
pub const MAX_MEDIA_DIMENSION: i32 = 20_000;
/// Durations a client may claim, in seconds (a week).
pub const MAX_MEDIA_DURATION_SECS: f64 = 604_800.0;
/// Stored sizes of one photo (`s`, `m`, `x`, `y`, `w` and room).
pub const MAX_PHOTO_SIZES: usize = 8;
/// A stripped (`i`) thumbnail's bytes: a few hundred in practice.
pub const MAX_STRIPPED_THUMB_BYTES: usize = 4096;
/// How long a `file_reference` handed out with a message stays good (Telegram's last a few hours);
/// after it a download answers `FILE_REFERENCE_EXPIRED` and the client fetches the message again.
pub const FILE_REFERENCE_LIFETIME_SECS: i32 = 4 * 3600;
/// Photos one `photos.deletePhotos` call may name (Telegram pages profile photos by 100):
/// `LIMIT_INVALID` above.
pub const MAX_DELETE_PHOTOS: usize = 100;
/// The most photos one `photos.getUserPhotos` page answers; a larger `limit` is cut to it, as
/// Telegram does.
pub const MAX_USER_PHOTOS_LIMIT: i32 = 100;
