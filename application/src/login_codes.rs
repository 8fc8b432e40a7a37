//! Sign-in codes: how they are delivered ([`LoginCodes`]), where they are kept ([`CodeStore`]) and
//! the limits on them. Both fronts sign in through [`crate::commands::sign_in`].

use std::time::Duration;

use async_trait::async_trait;

use crate::ports::StoreError;

/// Digits of a generated sign-in code: Telegram sends 5-digit codes (`auth.sentCodeTypeApp
/// length:5` / `auth.sentCodeTypeSms length:5` in what its servers answer).
pub const CODE_LENGTH: usize = 5;

/// How long a `phone_code_hash` (and its code) is accepted after `auth.sendCode`. Telegram does not
/// publish its value; 5 minutes is long enough for an SMS to arrive and short enough that a code
/// read over someone's shoulder soon stops working.
pub const CODE_LIFETIME: Duration = Duration::from_secs(5 * 60);

/// Wrong codes accepted for one `phone_code_hash`; the one that reaches this kills the hash
/// (`PHONE_CODE_EXPIRED` afterwards). Telegram does not publish its number; with 5 tries an
/// attacker guesses a 5-digit code with probability 5/100000 per hash, and the hashes per phone
/// and per requester are limited too.
pub const MAX_CODE_ATTEMPTS: u32 = 5;

/// The window over which codes sent are counted.
pub const SEND_WINDOW: Duration = Duration::from_secs(60 * 60);

/// Codes (`auth.sendCode` and `auth.resendCode`) one phone may be sent per [`SEND_WINDOW`]: enough
/// for a user who mistypes or loses a few SMS, not enough to make a phone a spam target through
/// the operator's SMS gateway.
pub const MAX_SENDS_PER_PHONE: u32 = 5;

/// Codes one requester (an HTTP client's IP address, an MTProto auth key) may ask for per
/// [`SEND_WINDOW`], whatever the phones: a client signing several accounts in fits, one walking
/// the number space does not.
pub const MAX_SENDS_PER_REQUESTER: u32 = 20;

/// After a hash dies of [`MAX_CODE_ATTEMPTS`] wrong codes, its phone and its requester get
/// `FLOOD_WAIT_X` on new codes for this long, so guessing cannot continue on a fresh hash.
pub const LOCKOUT: Duration = Duration::from_secs(60 * 60);

/// How a code reached the user, for `auth.sentCode.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CodeChannel {
    /// Shown in another signed-in app (`auth.sentCodeTypeApp`): the development provider.
    App,
    /// By SMS (`auth.sentCodeTypeSms`): the webhook provider.
    Sms,
}

/// Why a delivery failed; answered `SMS_CODE_CREATE_FAILED` (Telegram's name for it).
#[derive(Debug, thiserror::Error)]
#[error("delivering the sign-in code failed: {0}")]
pub struct DeliveryError(pub String);

/// Delivers sign-in codes (an SMS gateway, or nothing at all for the development code).
#[async_trait]
pub trait LoginCodes: Send + Sync {
    /// The channel the user finds the code in.
    fn channel(&self) -> CodeChannel;
    /// A fixed code this provider wants instead of a random one (the development provider).
    fn fixed_code(&self) -> Option<&str> {
        None
    }
    /// Sends `code` to `phone` (normalized, `+` and digits); `hash` is the request's
    /// `phone_code_hash`, for the provider's logs.
    async fn deliver(&self, phone: &str, code: &str, hash: &str) -> Result<(), DeliveryError>;
}

/// Who asks for codes, for the per-requester limits: `ip:<address>` on HTTP, `key:<auth key id>`
/// on MTProto.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requester(String);

impl Requester {
    pub fn ip(ip: std::net::IpAddr) -> Self {
        Self(format!("ip:{ip}"))
    }

    pub fn auth_key(id: i64) -> Self {
        Self(format!("key:{id}"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The limits a [`CodeStore`] enforces; [`CodeLimits::default`] is the named constants.
#[derive(Debug, Clone, Copy)]
pub struct CodeLimits {
    pub lifetime: Duration,
    pub max_attempts: u32,
    pub window: Duration,
    pub sends_per_phone: u32,
    pub sends_per_requester: u32,
    pub lockout: Duration,
}

impl Default for CodeLimits {
    fn default() -> Self {
        Self {
            lifetime: CODE_LIFETIME,
            max_attempts: MAX_CODE_ATTEMPTS,
            window: SEND_WINDOW,
            sends_per_phone: MAX_SENDS_PER_PHONE,
            sends_per_requester: MAX_SENDS_PER_REQUESTER,
            lockout: LOCKOUT,
        }
    }
}

/// What [`CodeStore::issue`] and [`CodeStore::resend`] did.
#[derive(Debug, PartialEq, Eq)]
pub enum Issued {
    /// Stored; deliver this code.
    Code(String),
    /// A limit is reached: retry after this many seconds.
    FloodWait(u32),
    /// (resend only) the hash is not live for that phone.
    Expired,
}

/// What [`CodeStore::try_code`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum CodeCheck {
    /// The code is right: the hash is now verified (for `auth.signUp`) until it is consumed.
    Accepted,
    /// Wrong code; the hash is dead when this was the last allowed try.
    Wrong,
    /// No live hash for that phone: unknown, for another phone, expired, cancelled or dead.
    Expired,
}

/// Sign-in codes kept for every instance (Postgres), each atomically counted.
#[async_trait]
pub trait CodeStore: Send + Sync {
    /// Stores `code` under the new `hash` unless the phone or the requester is past a limit.
    async fn issue(
        &self,
        phone: &str,
        requester: &str,
        hash: &str,
        code: &str,
        limits: &CodeLimits,
    ) -> Result<Issued, StoreError>;
    /// Counts a resend of a live, unverified hash of the phone and answers its code again.
    async fn resend(
        &self,
        phone: &str,
        requester: &str,
        hash: &str,
        limits: &CodeLimits,
    ) -> Result<Issued, StoreError>;
    /// Counts one try of `code` against the phone's live hash (concurrent tries are serialized,
    /// so no batch of requests gets more than `max_attempts`).
    async fn try_code(
        &self,
        phone: &str,
        hash: &str,
        code: &str,
        max_attempts: u32,
    ) -> Result<CodeCheck, StoreError>;
    /// Whether the hash is live, of this phone and verified by a right code (for `auth.signUp`).
    async fn verified(&self, phone: &str, hash: &str) -> Result<bool, StoreError>;
    /// Ends the hash (signed in, or `auth.cancelCode`); false if it was not live for that phone.
    async fn close(&self, phone: &str, hash: &str) -> Result<bool, StoreError>;
}
