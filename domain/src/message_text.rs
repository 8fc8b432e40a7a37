//! Message and quote text that is known to be within its limits.

use serde::{Deserialize, Serialize};

use crate::error::DomainError;
use crate::limits::{MAX_MESSAGE_TEXT_CODE_POINTS, MAX_QUOTE_TEXT_CODE_POINTS};

/// The text of a message: not empty, at most 4096 code points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct MessageText(String);

/// NUL cannot be stored in Postgres text and no client means it: it is dropped.
pub(crate) fn without_nul(raw: String) -> String {
    if raw.contains('\0') {
        raw.replace('\0', "")
    } else {
        raw
    }
}

impl MessageText {
    pub fn parse(raw: String) -> Result<Self, DomainError> {
        let raw = without_nul(raw);
        if raw.trim().is_empty() {
            return Err(DomainError::MessageEmpty);
        }
        if raw.chars().count() > MAX_MESSAGE_TEXT_CODE_POINTS {
            return Err(DomainError::MessageTooLong);
        }
        Ok(Self(raw))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn into_string(self) -> String {
        self.0
    }
    /// Length in UTF-16 code units: TL entity offsets and lengths count these.
    pub fn utf16_len(&self) -> usize {
        self.0.encode_utf16().count()
    }
}

/// A quote of the replied-to message: at most 1024 code points.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct QuoteText(String);

impl QuoteText {
    pub fn parse(raw: String) -> Result<Self, DomainError> {
        let raw = without_nul(raw);
        if raw.chars().count() > MAX_QUOTE_TEXT_CODE_POINTS {
            return Err(DomainError::QuoteTextInvalid);
        }
        Ok(Self(raw))
    }
    pub fn as_str(&self) -> &str {
        &self.0
    }
    pub fn utf16_len(&self) -> usize {
        self.0.encode_utf16().count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_limit_is_4096_code_points_not_bytes() {
        let at_limit = "я".repeat(MAX_MESSAGE_TEXT_CODE_POINTS);
        assert!(MessageText::parse(at_limit).is_ok());
        let over = "я".repeat(MAX_MESSAGE_TEXT_CODE_POINTS + 1);
        assert_eq!(MessageText::parse(over), Err(DomainError::MessageTooLong));
    }

    #[test]
    fn nul_is_dropped() {
        assert_eq!(MessageText::parse("a\0b".into()).unwrap().as_str(), "ab");
        assert_eq!(
            MessageText::parse("\0".into()),
            Err(DomainError::MessageEmpty)
        );
    }

    #[test]
    fn blank_text_is_empty() {
        assert_eq!(
            MessageText::parse(String::new()),
            Err(DomainError::MessageEmpty)
        );
        assert_eq!(
            MessageText::parse("  \n".into()),
            Err(DomainError::MessageEmpty)
        );
    }

    #[test]
    fn quote_limit_is_1024_code_points() {
        assert!(QuoteText::parse("😀".repeat(MAX_QUOTE_TEXT_CODE_POINTS)).is_ok());
        assert_eq!(
            QuoteText::parse("😀".repeat(MAX_QUOTE_TEXT_CODE_POINTS + 1)),
            Err(DomainError::QuoteTextInvalid)
        );
    }
}
