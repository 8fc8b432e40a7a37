//! Where sign-in codes come from. The development provider accepts one fixed code for every phone;
//! a real one (SMS, another app) implements [`LoginCodes`] and is given to the front instead.

use async_trait::async_trait;

/// Delivers sign-in codes and checks what users type.
#[async_trait]
pub trait LoginCodes: Send + Sync {
    /// Sends a code to the phone (normalized, `+` and digits); answers the code's length, which
    /// clients use to size their input field. An `Err` is the TL error message to answer
    /// (e.g. `PHONE_NUMBER_BANNED`, `FLOOD_WAIT_60`).
    async fn send(&self, phone: &str) -> Result<usize, String>;
    /// Whether `code` is the one sent to the phone (and not expired).
    async fn check(&self, phone: &str, code: &str) -> bool;
}

/// `PTSLOG_DEV_LOGIN_CODE`: the same code for every phone, sent nowhere.
pub struct DevCode(pub String);

#[async_trait]
impl LoginCodes for DevCode {
    async fn send(&self, _phone: &str) -> Result<usize, String> {
        Ok(self.0.chars().count())
    }

    async fn check(&self, _phone: &str, code: &str) -> bool {
        // Constant time is not needed: the development code is public by design.
        code == self.0
    }
}
