//! The development [`LoginCodes`] provider: one fixed code for every phone, sent nowhere. It
//! exists only while development sign-in is on (`PTSLOG_DEV_LOGIN=true`): [`DevCode::new`]
//! refuses otherwise, and `ptslog serve` warns loudly at start when it is on.

use application::login_codes::{CodeChannel, DeliveryError, LoginCodes};
use async_trait::async_trait;

/// `PTSLOG_DEV_LOGIN_CODE` (default [`DEFAULT_DEV_CODE`]): the same code for every phone.
pub struct DevCode(String);

/// The development code when none is configured (what tests/mtproto/*.py and *.js type).
pub const DEFAULT_DEV_CODE: &str = "12345";

impl DevCode {
    /// The provider, only when development sign-in is explicitly on.
    pub fn new(code: &str, dev_login: bool) -> Option<Self> {
        dev_login.then(|| Self(code.to_string()))
    }
}

#[async_trait]
impl LoginCodes for DevCode {
    fn channel(&self) -> CodeChannel {
        CodeChannel::App
    }

    fn fixed_code(&self) -> Option<&str> {
        Some(&self.0)
    }

    async fn deliver(&self, _phone: &str, _code: &str, _hash: &str) -> Result<(), DeliveryError> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refused_unless_enabled() {
        assert!(DevCode::new("12345", false).is_none());
        assert_eq!(
            DevCode::new("12345", true).unwrap().fixed_code(),
            Some("12345")
        );
    }
}
