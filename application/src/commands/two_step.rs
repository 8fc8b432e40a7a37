//! Two-step verification as Telegram does it (core.telegram.org/api/srp): account.getPassword
//! hands out the SRP parameters and a single-use exchange (srp_id, B), account.
//! updatePasswordSettings sets, changes or removes the password (the client sends only the
//! verifier v = g^x mod p), and a sign-in whose code was right waits for auth.checkPassword when
//! the account has a password. The math is [`domain::srp`]; the state is behind [`Passwords`].

use std::sync::Arc;

use domain::srp::{self, ServerExchange, SrpError, Verifier};
use domain::UserId;
use rand::rngs::OsRng;
use rand::RngCore;
use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};
use thiserror::Error;

use crate::clock::unix_now;
use crate::error::AppError;
use crate::password_port::{Passwords, SrpExchangeRecord, StoredPassword};
use crate::ports::StoreError;
use crate::tl::long;
use crate::tl::RpcError;
use crate::App;

/// How long an exchange (srp_id, B) from account.getPassword may be used. Telegram's clients
/// ask for a fresh one right before each check, and the PBKDF2 step takes them about a second;
/// 5 minutes leaves room for a slow phone without keeping secrets b around.
pub const SRP_EXCHANGE_LIFETIME_SECS: i64 = 300;
/// Exchanges one account may have open at once; account.getPassword drops the oldest past it,
/// so a loop of calls cannot grow the table. A client uses one at a time; 8 leaves room for
/// several devices asking at once.
pub const MAX_OPEN_SRP_EXCHANGES: usize = 8;
/// Wrong passwords one account may give per [`PASSWORD_FAILURE_WINDOW_SECS`]; the next check
/// answers `FLOOD_WAIT_X` until the oldest one leaves the window. 5 an hour makes guessing
/// hopeless while a user who mistypes a few times is not locked out for long.
pub const MAX_PASSWORD_FAILURES: u32 = 5;
/// The sliding window [`MAX_PASSWORD_FAILURES`] is counted over: one hour.
pub const PASSWORD_FAILURE_WINDOW_SECS: i64 = 3600;
/// How long an auth key that gave the right sign-in code may finish the sign-in with
/// auth.checkPassword (10 minutes, like the code's own lifetime in Telegram's apps).
pub const PENDING_SIGN_IN_LIFETIME_SECS: i64 = 600;
/// Bytes of salt1 the server chooses; the client appends its own 32 (Telethon, tdesktop).
pub const SERVER_SALT1_BYTES: usize = 8;
/// Bytes of salt2 (the server's).
pub const SALT2_BYTES: usize = 16;
/// The longest salt accepted back in `new_algo` (the server's 8 + the client's 32, with room).
pub const MAX_SALT_BYTES: usize = 64;
/// The longest hint, in code points (Telegram's apps cap the field near this).
pub const MAX_HINT_CODE_POINTS: usize = 64;
/// The longest recovery email (RFC 5321's path limit).
pub const MAX_EMAIL_BYTES: usize = 254;
/// `secure_random` in account.password: 256 bytes, as Telegram sends.
pub const SECURE_RANDOM_BYTES: usize = 256;
/// The longest hex string accepted for a `bytes` field here (A, M1, a verifier or salt: 256
/// bytes at most, so 512 hex digits).
const MAX_HEX_CHARS: usize = 2 * srp::SIZE;

/// Why a password call was refused; [`RpcError::from`] gives its TL error.
#[derive(Debug, Error)]
pub enum TwoStepError {
    #[error(transparent)]
    App(#[from] AppError),
    #[error("the password proof is wrong")]
    PasswordHashInvalid,
    #[error("the SRP exchange is unknown, used or expired")]
    SrpIdInvalid,
    #[error("the password changed since the SRP exchange was made")]
    SrpPasswordChanged,
    #[error("the account has no password")]
    PasswordEmpty,
    #[error("too many wrong passwords, retry in {0} s")]
    FloodWait(u32),
    #[error("new_algo is not the group and salts account.getPassword gave")]
    NewSaltInvalid,
    #[error("the new settings are invalid: {0}")]
    NewSettingsInvalid(&'static str),
    #[error("the recovery email is invalid")]
    EmailInvalid,
    #[error("no sign-in is waiting for a password on this key")]
    NoPendingSignIn,
    #[error("two-step verification is not configured on this server")]
    Unavailable,
}

impl From<StoreError> for TwoStepError {
    fn from(e: StoreError) -> Self {
        Self::App(AppError::Store(e))
    }
}

impl From<&TwoStepError> for RpcError {
    fn from(e: &TwoStepError) -> Self {
        use TwoStepError::*;
        match e {
            App(app) => RpcError::from(app),
            PasswordHashInvalid => RpcError::new(400, "PASSWORD_HASH_INVALID"),
            SrpIdInvalid => RpcError::new(400, "SRP_ID_INVALID"),
            SrpPasswordChanged => RpcError::new(400, "SRP_PASSWORD_CHANGED"),
            PasswordEmpty => RpcError::new(400, "PASSWORD_EMPTY"),
            FloodWait(secs) => RpcError::new(420, format!("FLOOD_WAIT_{secs}")),
            NewSaltInvalid => RpcError::new(400, "NEW_SALT_INVALID"),
            NewSettingsInvalid(why) => RpcError::new(400, "NEW_SETTINGS_INVALID").with_detail(*why),
            EmailInvalid => RpcError::new(400, "EMAIL_INVALID"),
            NoPendingSignIn => RpcError::unauthorized(),
            Unavailable => RpcError::new(400, "PASSWORD_UNAVAILABLE"),
        }
    }
}

/// A TL `bytes` field as the fronts give it: hex, at most [`MAX_HEX_CHARS`] digits.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct HexBytes(pub Vec<u8>);

impl std::fmt::Debug for HexBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HexBytes({} bytes)", self.0.len())
    }
}

impl<'de> Deserialize<'de> for HexBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.len() > MAX_HEX_CHARS {
            return Err(serde::de::Error::custom("bytes field too long"));
        }
        hex::decode(&s)
            .map(HexBytes)
            .map_err(|_| serde::de::Error::custom("bytes must be hex"))
    }
}

/// `InputCheckPasswordSRP`.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "_")]
pub enum InputCheckPassword {
    #[serde(rename = "inputCheckPasswordEmpty")]
    Empty,
    #[serde(rename = "inputCheckPasswordSRP")]
    Srp {
        #[serde(deserialize_with = "long")]
        srp_id: i64,
        #[serde(rename = "A")]
        a: HexBytes,
        #[serde(rename = "M1")]
        m1: HexBytes,
    },
}

/// `PasswordKdfAlgo` in new settings.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "_")]
pub enum PasswordKdfAlgo {
    #[serde(rename = "passwordKdfAlgoUnknown")]
    Unknown,
    #[serde(rename = "passwordKdfAlgoSHA256SHA256PBKDF2HMACSHA512iter100000SHA256ModPow")]
    ModPow {
        salt1: HexBytes,
        salt2: HexBytes,
        g: i64,
        p: HexBytes,
    },
}

/// `account.passwordInputSettings` (new_secure_settings is not kept: no Telegram Passport).
#[derive(Debug, Clone, Deserialize)]
pub struct PasswordInputSettings {
    #[serde(default)]
    pub new_algo: Option<PasswordKdfAlgo>,
    #[serde(default)]
    pub new_password_hash: Option<HexBytes>,
    #[serde(default)]
    pub hint: Option<String>,
    #[serde(default)]
    pub email: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct UpdatePasswordSettings {
    pub password: InputCheckPassword,
    pub new_settings: PasswordInputSettings,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CheckPassword {
    pub password: InputCheckPassword,
}

/// The JSON API's handle on a sign-in waiting for a password (the MTProto front keys it by the
/// auth key instead): 32 random bytes, 64 hex digits on the wire.
#[derive(Clone, PartialEq, Eq)]
pub struct PasswordToken([u8; 32]);

impl PasswordToken {
    pub fn to_hex(&self) -> String {
        hex::encode(self.0)
    }
}

impl std::fmt::Debug for PasswordToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordToken(..)")
    }
}

impl<'de> Deserialize<'de> for PasswordToken {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        let mut b = [0u8; 32];
        if s.len() != 2 * b.len() || hex::decode_to_slice(&s, &mut b).is_err() {
            return Err(serde::de::Error::custom(
                "password_token must be 64 hex digits",
            ));
        }
        Ok(Self(b))
    }
}

/// `POST /v1/auth/getPassword`.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenGetPassword {
    pub password_token: PasswordToken,
}

/// `POST /v1/auth/checkPassword`.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenCheckPassword {
    pub password_token: PasswordToken,
    pub password: InputCheckPassword,
}

/// What the new settings ask for.
enum NewPassword {
    Set(StoredPassword),
    Remove,
}

fn random<const N: usize>() -> [u8; N] {
    let mut b = [0u8; N];
    OsRng.fill_bytes(&mut b);
    b
}

fn random_vec(n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    OsRng.fill_bytes(&mut b);
    b
}

fn kdf_algo(salt1: &[u8], salt2: &[u8]) -> Value {
    json!({
        "_": "passwordKdfAlgoSHA256SHA256PBKDF2HMACSHA512iter100000SHA256ModPow",
        "salt1": hex::encode(salt1),
        "salt2": hex::encode(salt2),
        "g": srp::GENERATOR,
        "p": hex::encode(srp::PRIME),
    })
}

/// Parses the new settings against the group this server uses.
fn new_password(settings: PasswordInputSettings) -> Result<NewPassword, TwoStepError> {
    let email = match settings.email.map(|e| e.trim().to_string()) {
        None => None,
        Some(e) if e.is_empty() => None,
        Some(e) => {
            let shaped = e.len() <= MAX_EMAIL_BYTES
                && e.split_once('@')
                    .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.'))
                && !e.chars().any(|c| c.is_whitespace() || c.is_control());
            if !shaped {
                return Err(TwoStepError::EmailInvalid);
            }
            Some(e)
        }
    };
    let hash = settings.new_password_hash.unwrap_or_default();
    let (salt1, salt2) = match settings.new_algo {
        None | Some(PasswordKdfAlgo::Unknown) if hash.0.is_empty() => {
            return Ok(NewPassword::Remove)
        }
        Some(PasswordKdfAlgo::ModPow { salt1, salt2, g, p }) => {
            if hash.0.is_empty() {
                return Ok(NewPassword::Remove);
            }
            if g != i64::from(srp::GENERATOR) || p.0 != srp::PRIME {
                return Err(TwoStepError::NewSettingsInvalid(
                    "new_algo must use the g and p account.getPassword gave",
                ));
            }
            let salt1_ok = (SERVER_SALT1_BYTES..=MAX_SALT_BYTES).contains(&salt1.0.len());
            let salt2_ok = (1..=MAX_SALT_BYTES).contains(&salt2.0.len());
            if !salt1_ok || !salt2_ok {
                return Err(TwoStepError::NewSaltInvalid);
            }
            (salt1.0, salt2.0)
        }
        _ => {
            return Err(TwoStepError::NewSettingsInvalid(
                "a new password needs new_algo passwordKdfAlgoSHA256SHA256PBKDF2HMACSHA512iter100000SHA256ModPow",
            ))
        }
    };
    let verifier = Verifier::parse(&hash.0)
        .map_err(|_| TwoStepError::NewSettingsInvalid("new_password_hash is not g^x mod p"))?;
    let hint = settings.hint.unwrap_or_default().trim().to_string();
    if hint.chars().count() > MAX_HINT_CODE_POINTS || hint.chars().any(char::is_control) {
        return Err(TwoStepError::NewSettingsInvalid("the hint is too long"));
    }
    Ok(NewPassword::Set(StoredPassword {
        salt1,
        salt2,
        verifier: verifier.as_bytes().to_vec(),
        hint,
        email,
        version: i64::from_le_bytes(random()),
    }))
}

impl App {
    /// Gives the application its two-step verification store (the server always does; an App
    /// without one answers `PASSWORD_UNAVAILABLE`).
    pub fn with_passwords(mut self, passwords: Arc<dyn Passwords>) -> Self {
        self.passwords = Some(passwords);
        self
    }

    fn passwords(&self) -> Result<&dyn Passwords, TwoStepError> {
        self.passwords.as_deref().ok_or(TwoStepError::Unavailable)
    }

    /// account.getPassword for `user`: the group, the current salts and a fresh single-use
    /// exchange when there is a password, and the parameters for setting one.
    pub async fn get_password(&self, user: UserId) -> Result<Value, TwoStepError> {
        let passwords = self.passwords()?;
        let salt1 = random_vec(SERVER_SALT1_BYTES);
        let new_salt2 = random_vec(SALT2_BYTES);
        let mut answer = json!({
            "_": "account.password",
            "new_secure_algo": {
                "_": "securePasswordKdfAlgoSHA512",
                "salt": hex::encode(random_vec(SERVER_SALT1_BYTES)),
            },
            "secure_random": hex::encode(random_vec(SECURE_RANDOM_BYTES)),
        });
        if let Some(stored) = passwords.password(user).await? {
            let verifier = Verifier::parse(&stored.verifier)
                .map_err(|_| StoreError::Corrupt("a stored password verifier".into()))?;
            // About 1 b in 2^63 gives an unsafe B: draw again.
            let exchange = loop {
                if let Some(e) = ServerExchange::new(&verifier, random()) {
                    break e;
                }
            };
            let srp_id = i64::from_le_bytes(random());
            passwords
                .save_exchange(
                    &SrpExchangeRecord {
                        srp_id,
                        user_id: user,
                        secret_b: exchange.secret().to_vec(),
                        version: stored.version,
                    },
                    i64::from(unix_now()) + SRP_EXCHANGE_LIFETIME_SECS,
                    MAX_OPEN_SRP_EXCHANGES,
                )
                .await?;
            answer["has_password"] = json!(true);
            answer["current_algo"] = kdf_algo(&stored.salt1, &stored.salt2);
            answer["srp_B"] = json!(hex::encode(exchange.public()));
            answer["srp_id"] = json!(srp_id);
            if !stored.hint.is_empty() {
                answer["hint"] = json!(stored.hint);
            }
        }
        answer["new_algo"] = kdf_algo(&salt1, &new_salt2);
        Ok(answer)
    }

    /// account.updatePasswordSettings: sets, changes or removes the password (and its hint and
    /// unverified recovery email); the current one must be proven when there is one.
    pub async fn update_password_settings(
        &self,
        user: UserId,
        req: UpdatePasswordSettings,
    ) -> Result<bool, TwoStepError> {
        let passwords = self.passwords()?;
        let new = new_password(req.new_settings)?;
        let current = passwords.password(user).await?;
        let expected = match &current {
            None => {
                if matches!(new, NewPassword::Remove) {
                    return Ok(true);
                }
                None
            }
            Some(stored) => {
                self.check(passwords, user, stored, &req.password).await?;
                Some(stored.version)
            }
        };
        let new = match &new {
            NewPassword::Set(p) => Some(p),
            NewPassword::Remove => None,
        };
        if !passwords.replace_password(user, expected, new).await? {
            return Err(TwoStepError::SrpPasswordChanged);
        }
        Ok(true)
    }

    /// Proves the password with one exchange: the attempt limit first, then the exchange is
    /// used up (right or wrong) and the proof checked.
    async fn check(
        &self,
        passwords: &dyn Passwords,
        user: UserId,
        stored: &StoredPassword,
        input: &InputCheckPassword,
    ) -> Result<(), TwoStepError> {
        let InputCheckPassword::Srp { srp_id, a, m1 } = input else {
            return Err(TwoStepError::PasswordHashInvalid);
        };
        let now = i64::from(unix_now());
        let (failures, oldest) = passwords
            .failures_since(user, now - PASSWORD_FAILURE_WINDOW_SECS + 1)
            .await?;
        if failures >= MAX_PASSWORD_FAILURES {
            let retry = oldest.map_or(PASSWORD_FAILURE_WINDOW_SECS, |t| {
                t + PASSWORD_FAILURE_WINDOW_SECS - now
            });
            return Err(TwoStepError::FloodWait(
                retry.clamp(1, u32::MAX.into()) as u32
            ));
        }
        let exchange = passwords
            .take_exchange(user, *srp_id, now)
            .await?
            .ok_or(TwoStepError::SrpIdInvalid)?;
        if exchange.version != stored.version {
            return Err(TwoStepError::SrpPasswordChanged);
        }
        let corrupt = || StoreError::Corrupt("a stored SRP exchange".into());
        let verifier = Verifier::parse(&stored.verifier).map_err(|_| corrupt())?;
        let secret: [u8; srp::SIZE] = exchange.secret_b.try_into().map_err(|_| corrupt())?;
        let server = ServerExchange::new(&verifier, secret).ok_or_else(corrupt)?;
        match server.verify(&verifier, &stored.salt1, &stored.salt2, &a.0, &m1.0) {
            Ok(()) => Ok(()),
            Err(SrpError::Mismatch | SrpError::BadA | SrpError::BadVerifier) => {
                passwords.record_failure(user, now).await?;
                Err(TwoStepError::PasswordHashInvalid)
            }
        }
    }

    /// Whether the account has a password (a sign-in then waits for auth.checkPassword).
    pub async fn has_password(&self, user: UserId) -> Result<bool, TwoStepError> {
        Ok(self.passwords()?.password(user).await?.is_some())
    }

    /// The account of `phone` when it has a password (a right code then only starts the
    /// sign-in).
    pub async fn password_account(&self, phone: &str) -> Result<Option<UserId>, TwoStepError> {
        let phone = crate::commands::login::normalize_phone(phone).map_err(AppError::from)?;
        let Some(user) = self
            .store
            .user_by_phone(&phone)
            .await
            .map_err(AppError::from)?
        else {
            return Ok(None);
        };
        Ok(self.has_password(user.id).await?.then_some(user.id))
    }

    /// Remembers that auth key `auth_key_id` gave the right code for `user`'s account.
    pub async fn begin_password_sign_in(
        &self,
        auth_key_id: i64,
        user: UserId,
    ) -> Result<(), TwoStepError> {
        let expires = i64::from(unix_now()) + PENDING_SIGN_IN_LIFETIME_SECS;
        Ok(self
            .passwords()?
            .set_pending_sign_in(auth_key_id, user, expires)
            .await?)
    }

    /// The account a sign-in on `auth_key_id` waits for a password of, if any.
    pub async fn pending_password_sign_in(
        &self,
        auth_key_id: i64,
    ) -> Result<Option<UserId>, TwoStepError> {
        Ok(self
            .passwords()?
            .pending_sign_in(auth_key_id, i64::from(unix_now()))
            .await?)
    }

    /// auth.checkPassword: proves the password of the sign-in waiting on `auth_key_id`; answers
    /// the account's phone to finish the sign-in with.
    pub async fn check_password_sign_in(
        &self,
        auth_key_id: i64,
        req: CheckPassword,
    ) -> Result<String, TwoStepError> {
        let user = self
            .pending_password_sign_in(auth_key_id)
            .await?
            .ok_or(TwoStepError::NoPendingSignIn)?;
        self.prove_sign_in(user, &req.password).await?;
        self.passwords()?.clear_pending_sign_in(auth_key_id).await?;
        self.phone_of(user).await
    }

    /// The JSON API's half of [`Self::begin_password_sign_in`]: a new single-use token stands
    /// for "this client gave the right code for `user`".
    pub async fn begin_token_password_sign_in(
        &self,
        user: UserId,
    ) -> Result<PasswordToken, TwoStepError> {
        let token = PasswordToken(random());
        let expires = i64::from(unix_now()) + PENDING_SIGN_IN_LIFETIME_SECS;
        self.passwords()?
            .set_token_sign_in(&token.0, user, expires)
            .await?;
        Ok(token)
    }

    /// `/v1/auth/getPassword`: account.getPassword for the sign-in `token` stands for.
    pub async fn token_get_password(&self, token: &PasswordToken) -> Result<Value, TwoStepError> {
        let user = self.token_account(token).await?;
        self.get_password(user).await
    }

    /// `/v1/auth/checkPassword`: auth.checkPassword for the sign-in `token` stands for (the
    /// same proof and attempt limit); the token is spent once the password is right.
    pub async fn token_check_password(
        &self,
        req: TokenCheckPassword,
    ) -> Result<String, TwoStepError> {
        let user = self.token_account(&req.password_token).await?;
        self.prove_sign_in(user, &req.password).await?;
        if !self
            .passwords()?
            .clear_token_sign_in(&req.password_token.0)
            .await?
        {
            // A concurrent check with the same token came first: one token, one device.
            return Err(TwoStepError::NoPendingSignIn);
        }
        self.phone_of(user).await
    }

    async fn token_account(&self, token: &PasswordToken) -> Result<UserId, TwoStepError> {
        self.passwords()?
            .token_sign_in(&token.0, i64::from(unix_now()))
            .await?
            .ok_or(TwoStepError::NoPendingSignIn)
    }

    async fn prove_sign_in(
        &self,
        user: UserId,
        input: &InputCheckPassword,
    ) -> Result<(), TwoStepError> {
        let passwords = self.passwords()?;
        let stored = passwords
            .password(user)
            .await?
            .ok_or(TwoStepError::PasswordEmpty)?;
        self.check(passwords, user, &stored, input).await
    }

    async fn phone_of(&self, user: UserId) -> Result<String, TwoStepError> {
        let record = self
            .store
            .users(&[user])
            .await
            .map_err(AppError::from)?
            .into_iter()
            .next()
            .ok_or(TwoStepError::NoPendingSignIn)?;
        Ok(record.phone)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(v: Value) -> PasswordInputSettings {
        serde_json::from_value(v).unwrap()
    }

    fn algo(salt1: &[u8]) -> Value {
        kdf_algo(salt1, &[9; SALT2_BYTES])
    }

    fn verifier() -> String {
        hex::encode(Verifier::from_x(&[5; 32]).as_bytes())
    }

    #[test]
    fn new_settings_limits() {
        let hint = "ж".repeat(MAX_HINT_CODE_POINTS);
        let set = settings(
            json!({"new_algo": algo(&[1; 40]), "new_password_hash": verifier(), "hint": hint}),
        );
        assert!(
            matches!(new_password(set), Ok(NewPassword::Set(p)) if p.hint.chars().count() == MAX_HINT_CODE_POINTS)
        );
        let long = settings(
            json!({"new_algo": algo(&[1; 40]), "new_password_hash": verifier(), "hint": "ж".repeat(MAX_HINT_CODE_POINTS + 1)}),
        );
        assert!(matches!(
            new_password(long),
            Err(TwoStepError::NewSettingsInvalid(_))
        ));
        // salt1: the server's 8 bytes at least, 64 at most.
        for (len, ok) in [
            (SERVER_SALT1_BYTES - 1, false),
            (SERVER_SALT1_BYTES, true),
            (MAX_SALT_BYTES, true),
            (MAX_SALT_BYTES + 1, false),
        ] {
            let s =
                settings(json!({"new_algo": algo(&vec![1; len]), "new_password_hash": verifier()}));
            assert_eq!(new_password(s).is_ok(), ok, "salt1 of {len} bytes");
        }
        let mut other_p = algo(&[1; 40]);
        other_p["p"] = json!(hex::encode([0xffu8; 256]));
        let s = settings(json!({"new_algo": other_p, "new_password_hash": verifier()}));
        assert!(matches!(
            new_password(s),
            Err(TwoStepError::NewSettingsInvalid(_))
        ));
        let s = settings(json!({"new_algo": algo(&[1; 40]), "new_password_hash": "01"}));
        assert!(matches!(
            new_password(s),
            Err(TwoStepError::NewSettingsInvalid(_))
        ));
        let email = format!("{}@example.org", "a".repeat(MAX_EMAIL_BYTES - 12));
        assert_eq!(email.len(), MAX_EMAIL_BYTES);
        let s = settings(
            json!({"new_algo": algo(&[1; 40]), "new_password_hash": verifier(), "email": email}),
        );
        assert!(new_password(s).is_ok());
        let s = settings(
            json!({"new_algo": algo(&[1; 40]), "new_password_hash": verifier(), "email": format!("a{email}")}),
        );
        assert!(matches!(new_password(s), Err(TwoStepError::EmailInvalid)));
        // Telethon removes a password with its new_algo and an empty hash.
        let s = settings(json!({"new_algo": algo(&[1; 40]), "new_password_hash": "", "hint": ""}));
        assert!(matches!(new_password(s), Ok(NewPassword::Remove)));
        assert!(matches!(
            new_password(settings(json!({}))),
            Ok(NewPassword::Remove)
        ));
    }

    #[test]
    fn password_token_is_exactly_32_hex_bytes() {
        let parse = |s: String| serde_json::from_value::<PasswordToken>(json!(s));
        let token = PasswordToken(random());
        assert_eq!(parse(token.to_hex()).unwrap(), token);
        assert!(parse("ab".repeat(31)).is_err());
        assert!(parse("ab".repeat(33)).is_err());
        assert!(parse("zz".repeat(32)).is_err());
    }

    #[test]
    fn hex_fields_are_bounded() {
        let ok: Result<HexBytes, _> = serde_json::from_value(json!("ab".repeat(srp::SIZE)));
        assert_eq!(ok.unwrap().0.len(), srp::SIZE);
        let over: Result<HexBytes, _> = serde_json::from_value(json!("ab".repeat(srp::SIZE + 1)));
        assert!(over.is_err());
        let text: Result<HexBytes, _> = serde_json::from_value(json!("pw1"));
        assert!(text.is_err());
    }
}
