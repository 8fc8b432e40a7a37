//! TEMPORARY, until h/files' `take_upload` and `read_file_part` are cherry-picked: the same
//! signatures, refusing, so the media model builds and its other paths can be tested. Removed by
//! the cherry-pick (docs: report to the lead).

use domain::media::BlobKey;

use crate::error::AppError;
use crate::media::{InputFile, UploadedFile};
use crate::{App, Caller};

impl App {
    pub async fn take_upload(
        &self,
        _caller: &Caller,
        _file: &InputFile,
    ) -> Result<UploadedFile, AppError> {
        Err(AppError::BadRequest("FILE_PARTS_INVALID"))
    }

    pub async fn read_file_part(
        &self,
        _key: &BlobKey,
        _offset: i64,
        _limit: i32,
        _precise: bool,
    ) -> Result<Vec<u8>, AppError> {
        Err(AppError::BadRequest("FILE_ID_INVALID"))
    }
}
