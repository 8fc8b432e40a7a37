//! The operator token that guards the admin endpoints (`PTSLOG_ADMIN_TOKEN`).

use sha2::{Digest, Sha256};
use thiserror::Error;

/// Fewer characters than this is too easy to guess for a credential that reads every account.
pub const MIN_ADMIN_TOKEN_LEN: usize = 16;

/// An operator token: at least [`MIN_ADMIN_TOKEN_LEN`] visible ASCII characters. It is never a user
/// token: those live in the database, this one only in the configuration.
#[derive(Clone)]
pub struct AdminToken(String);

#[derive(Debug, Error, PartialEq, Eq)]
pub enum AdminTokenError {
    #[error("PTSLOG_ADMIN_TOKEN must be at least {MIN_ADMIN_TOKEN_LEN} characters")]
    TooShort,
    #[error("PTSLOG_ADMIN_TOKEN must be visible ASCII characters (no spaces)")]
    NotVisibleAscii,
}

impl AdminToken {
    pub fn new(token: &str) -> Result<Self, AdminTokenError> {
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(AdminTokenError::NotVisibleAscii);
        }
        if token.len() < MIN_ADMIN_TOKEN_LEN {
            return Err(AdminTokenError::TooShort);
        }
        Ok(Self(token.to_string()))
    }

    /// Whether `presented` is this token, in time independent of where they differ: both are hashed
    /// to fixed-length digests first (so their lengths leak nothing either), then every byte of the
    /// digests is compared.
    pub fn matches(&self, presented: &str) -> bool {
        let a = Sha256::digest(self.0.as_bytes());
        let b = Sha256::digest(presented.as_bytes());
        a.iter()
            .zip(b.iter())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
    }
}

impl std::fmt::Debug for AdminToken {
    // Never print the secret (configs are logged in debug output).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AdminToken(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_checked_and_compared() {
        assert_eq!(
            AdminToken::new("short").unwrap_err(),
            AdminTokenError::TooShort
        );
        assert_eq!(
            AdminToken::new("has a space in it here").unwrap_err(),
            AdminTokenError::NotVisibleAscii
        );
        let t = AdminToken::new("0123456789abcdef").unwrap();
        assert!(t.matches("0123456789abcdef"));
        assert!(!t.matches("0123456789abcdeF"));
        assert!(!t.matches("0123456789abcdef0"));
        assert!(!t.matches(""));
        assert_eq!(format!("{t:?}"), "AdminToken(***)");
    }
}
