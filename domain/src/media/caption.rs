//! The text of a media message: may be empty, at most 1024 code points.

use serde::{Deserialize, Serialize};

use super::limits::MAX_CAPTION_CODE_POINTS;
use crate::error::DomainError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Caption(String);

impl Caption {
    pub fn parse(raw: String) -> Result<Self, DomainError> {
        // NUL cannot be stored in Postgres text and no client means it (as for message text).
        let raw = crate::message_text::without_nul(raw);
        if raw.chars().count() > MAX_CAPTION_CODE_POINTS {
            return Err(DomainError::MediaCaptionTooLong);
        }
        Ok(Self(raw))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn into_string(self) -> String {
        self.0
    }
    /// Length in UTF-16 code units (entity offsets count these).
    pub fn utf16_len(&self) -> usize {
        self.0.encode_utf16().count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caption_is_at_most_1024_code_points_and_may_be_empty() {
        assert!(Caption::parse(String::new()).is_ok());
        assert!(Caption::parse("я".repeat(MAX_CAPTION_CODE_POINTS)).is_ok());
        assert_eq!(
            Caption::parse("я".repeat(MAX_CAPTION_CODE_POINTS + 1)),
            Err(DomainError::MediaCaptionTooLong)
        );
        assert_eq!(Caption::parse("a\0b".into()).unwrap().as_str(), "ab");
    }
}
