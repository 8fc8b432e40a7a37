//! Sessions and devices: what a device said about itself (`initConnection`), how it is listed
//! (`account.getAuthorizations`), and which devices a log-out ends (docs/security.md, "Sessions
//! and devices").

use std::time::Duration;

use domain::AuthKeyId;

/// Characters kept of each text a device reports about itself (device model, system and app
/// version, language, platform). Real clients send a few dozen ("Telegram Desktop",
/// "Windows 10 x64", "5.9.0 x64"); this bounds what a hostile client stores per device. Past it
/// the text is cut at this many characters (nothing is refused: the connection is not the fault).
pub const DEVICE_FIELD_MAX_CHARS: usize = 128;

/// How long a device's bearer token (and the signed-in state of its MTProto keys) lasts from
/// sign-in: Telegram's default `authorization_ttl_days` (180), which `account.getAuthorizations`
/// reports. Past it the token is refused (`401 AUTH_KEY_UNREGISTERED`) and the device must sign in
/// again.
pub const TOKEN_LIFETIME: Duration = Duration::from_secs(180 * 24 * 3600);

/// [`TOKEN_LIFETIME`] in whole days, as `account.authorizations.authorization_ttl_days`.
pub const TOKEN_LIFETIME_DAYS: i32 = (TOKEN_LIFETIME.as_secs() / (24 * 3600)) as i32;

/// One text a device reports, at most [`DEVICE_FIELD_MAX_CHARS`] characters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceText(String);

impl DeviceText {
    /// Keeps the first [`DEVICE_FIELD_MAX_CHARS`] characters of `raw` (control characters become
    /// spaces so a listing stays one line per field).
    pub fn new(raw: &str) -> Self {
        Self(
            raw.chars()
                .take(DEVICE_FIELD_MAX_CHARS)
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect(),
        )
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a device says about itself in `initConnection`, and where it connects from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeviceInfo {
    pub device_model: DeviceText,
    /// The client family (`lang_pack`: "tdesktop", "android", "ios", "macos"…).
    pub platform: DeviceText,
    pub system_version: DeviceText,
    pub app_version: DeviceText,
    pub lang_code: DeviceText,
    pub api_id: i32,
    /// The client's IP address as the server saw it (the TCP peer).
    pub ip: DeviceText,
}

/// One signed-in device of an account, as `account.getAuthorizations` lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// Its id: `authorization.hash`, what `account.resetAuthorization` names.
    pub id: AuthKeyId,
    pub device: DeviceInfo,
    /// Unix seconds.
    pub created_at: i64,
    pub active_at: i64,
    pub expires_at: i64,
}

/// Which of an account's devices a log-out ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// This one device (`auth.logOut`, `POST /v1/auth/logout`, `account.resetAuthorization`).
    One(AuthKeyId),
    /// Every device but this one (`auth.resetAuthorizations`).
    AllBut(AuthKeyId),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_texts_are_cut_at_the_limit() {
        let at = "é".repeat(DEVICE_FIELD_MAX_CHARS);
        assert_eq!(DeviceText::new(&at).as_str(), at);
        let past = "é".repeat(DEVICE_FIELD_MAX_CHARS + 1);
        assert_eq!(DeviceText::new(&past).as_str(), at);
        assert_eq!(DeviceText::new("a\nb").as_str(), "a b");
    }

    #[test]
    fn lifetime_in_days() {
        assert_eq!(TOKEN_LIFETIME_DAYS, 180);
    }
}
