//! Sign-in by code, the one flow both fronts use (`auth.sendCode`/`resendCode`/`cancelCode`/
//! `signIn`/`signUp` over MTProto, `POST /v1/auth/sendCode`/`signIn`/`signUp` over JSON): a random
//! code and a random `phone_code_hash` are stored with an expiry and an attempt count
//! ([`crate::login_codes`]); a right code for a live hash of that phone signs in (or asks for a
//! sign-up when the phone is new).

use std::sync::Arc;

use domain::{limits, DomainError};
use rand::rngs::OsRng;
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};

use crate::commands::login::{check_name, normalize_phone, LoginResult};
use crate::error::AppError;
use crate::login_codes::{
    CodeChannel, CodeCheck, CodeLimits, CodeStore, Issued, LoginCodes, Requester, CODE_LENGTH,
};
use crate::App;

/// Random bytes of a `phone_code_hash` (hex in the API): 128 bits, unguessable.
pub const HASH_BYTES: usize = 16;
/// The longest `phone_code_hash` looked up; longer ones cannot be ours (`PHONE_CODE_EXPIRED`
/// without a database round trip).
pub const MAX_HASH_CHARS: usize = 2 * HASH_BYTES;
/// The longest `phone_code` compared; longer ones are `PHONE_CODE_INVALID` without a try counted
/// (no stored code is that long: generated ones have [`CODE_LENGTH`] digits, the development one
/// is checked against this at start).
pub const MAX_CODE_CHARS: usize = 16;

/// What the sign-in flow runs on.
#[derive(Clone)]
pub struct SignInPorts {
    pub store: Arc<dyn CodeStore>,
    /// `None`: no provider configured (development sign-in off and no webhook).
    pub delivery: Option<Arc<dyn LoginCodes>>,
    pub limits: CodeLimits,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SendCode {
    pub phone_number: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct CodeRef {
    pub phone_number: String,
    #[serde(default)]
    pub phone_code_hash: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SignIn {
    pub phone_number: String,
    #[serde(default)]
    pub phone_code_hash: String,
    #[serde(default)]
    pub phone_code: String,
}

#[derive(Debug, Clone, Deserialize)]
pub struct SignUp {
    pub phone_number: String,
    #[serde(default)]
    pub phone_code_hash: String,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: String,
}

/// `auth.sentCode`.
#[derive(Debug, Clone, Serialize)]
pub struct SentCode {
    pub phone_code_hash: String,
    /// Digits of the code.
    pub length: usize,
    #[serde(serialize_with = "channel_name")]
    pub channel: CodeChannel,
    /// Seconds the hash stays live.
    pub timeout: u32,
}

fn channel_name<S: serde::Serializer>(c: &CodeChannel, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(match c {
        CodeChannel::App => "app",
        CodeChannel::Sms => "sms",
    })
}

/// What a right code leads to.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "_")]
pub enum SignInOutcome {
    #[serde(rename = "auth.authorization")]
    SignedIn(LoginResult),
    /// The phone has no account: `auth.signUp` with the same hash and names.
    #[serde(rename = "auth.authorizationSignUpRequired")]
    SignUpRequired,
    /// The account has a two-step verification password: the code is used up, and the device
    /// signs in only once `auth.checkPassword` proves the password (Telegram's
    /// `SESSION_PASSWORD_NEEDED`). Fronts answer that error; it is never serialised.
    #[serde(skip)]
    PasswordNeeded(domain::UserId),
}

fn random_hash() -> String {
    let mut bytes = [0u8; HASH_BYTES];
    OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

fn random_code() -> String {
    let n: u32 = OsRng.gen_range(0..10u32.pow(CODE_LENGTH as u32));
    format!("{n:0width$}", width = CODE_LENGTH)
}

fn bad(name: &'static str) -> AppError {
    AppError::BadRequest(name)
}

/// `has_password` fails only on storage (its port is checked before the call).
fn app_error(e: crate::commands::two_step::TwoStepError) -> AppError {
    match e {
        crate::commands::two_step::TwoStepError::App(e) => e,
        _ => bad("PASSWORD_UNAVAILABLE"),
    }
}

/// The hash as sent, refused when empty; one that cannot be ours is as good as expired.
fn hash_of(raw: &str) -> Result<&str, AppError> {
    match raw {
        "" => Err(bad("PHONE_CODE_HASH_EMPTY")),
        h if h.len() > MAX_HASH_CHARS => Err(bad("PHONE_CODE_EXPIRED")),
        h => Ok(h),
    }
}

impl App {
    fn sign_in_ports(&self) -> Result<&SignInPorts, AppError> {
        self.sign_in
            .as_ref()
            .ok_or(bad("PHONE_CODE_PROVIDER_MISSING"))
    }

    fn delivery(&self) -> Result<&Arc<dyn LoginCodes>, AppError> {
        self.sign_in_ports()?
            .delivery
            .as_ref()
            .ok_or(bad("PHONE_CODE_PROVIDER_MISSING"))
    }

    /// `auth.sendCode`: a new code and hash for the phone, delivered by the provider.
    pub async fn send_code(
        &self,
        req: &SendCode,
        requester: &Requester,
    ) -> Result<SentCode, AppError> {
        let phone = normalize_phone(&req.phone_number)?;
        let ports = self.sign_in_ports()?;
        let delivery = self.delivery()?;
        let hash = random_hash();
        let code = delivery
            .fixed_code()
            .map(str::to_string)
            .unwrap_or_else(random_code);
        let issued = ports
            .store
            .issue(&phone, requester.as_str(), &hash, &code, &ports.limits)
            .await?;
        self.deliver(&phone, &hash, issued).await
    }

    /// `auth.resendCode`: the same hash and code, sent again (counted like a send).
    pub async fn resend_code(
        &self,
        req: &CodeRef,
        requester: &Requester,
    ) -> Result<SentCode, AppError> {
        let phone = normalize_phone(&req.phone_number)?;
        let hash = hash_of(&req.phone_code_hash)?;
        let ports = self.sign_in_ports()?;
        self.delivery()?;
        let issued = ports
            .store
            .resend(&phone, requester.as_str(), hash, &ports.limits)
            .await?;
        self.deliver(&phone, hash, issued).await
    }

    async fn deliver(&self, phone: &str, hash: &str, issued: Issued) -> Result<SentCode, AppError> {
        let ports = self.sign_in_ports()?;
        let delivery = self.delivery()?;
        let code = match issued {
            Issued::Code(code) => code,
            Issued::FloodWait(secs) => return Err(AppError::FloodWait(secs)),
            Issued::Expired => return Err(bad("PHONE_CODE_EXPIRED")),
        };
        if let Err(e) = delivery.deliver(phone, &code, hash).await {
            tracing::warn!(error = %e, "sign-in code not delivered");
            // A code nobody received must not stay guessable.
            ports.store.close(phone, hash).await?;
            return Err(bad("SMS_CODE_CREATE_FAILED"));
        }
        Ok(SentCode {
            phone_code_hash: hash.to_string(),
            length: code.chars().count(),
            channel: delivery.channel(),
            timeout: ports.limits.lifetime.as_secs() as u32,
        })
    }

    /// `auth.cancelCode`: the hash stops working; false if it was not live for that phone.
    pub async fn cancel_code(&self, req: &CodeRef) -> Result<bool, AppError> {
        let phone = normalize_phone(&req.phone_number)?;
        let hash = hash_of(&req.phone_code_hash)?;
        Ok(self.sign_in_ports()?.store.close(&phone, hash).await?)
    }

    /// `auth.signIn`: checks the code (each try counted against the hash) and signs in, or asks
    /// for a sign-up when the phone has no account.
    pub async fn sign_in(&self, req: &SignIn) -> Result<SignInOutcome, AppError> {
        let phone = normalize_phone(&req.phone_number)?;
        let hash = hash_of(&req.phone_code_hash)?;
        let code = req.phone_code.trim();
        if code.is_empty() {
            return Err(bad("PHONE_CODE_EMPTY"));
        }
        if code.chars().count() > MAX_CODE_CHARS {
            return Err(bad("PHONE_CODE_INVALID"));
        }
        let ports = self.sign_in_ports()?;
        match ports
            .store
            .try_code(&phone, hash, code, ports.limits.max_attempts)
            .await?
        {
            CodeCheck::Accepted => self.code_accepted(&phone, hash).await,
            CodeCheck::Wrong => Err(bad("PHONE_CODE_INVALID")),
            CodeCheck::Expired => Err(bad("PHONE_CODE_EXPIRED")),
        }
    }

    /// The code was right: an existing account signs in, a new phone must sign up first.
    async fn code_accepted(&self, phone: &str, hash: &str) -> Result<SignInOutcome, AppError> {
        let Some(user) = self.store.user_by_phone(phone).await? else {
            return Ok(SignInOutcome::SignUpRequired);
        };
        if self.passwords.is_some() && self.has_password(user.id).await.map_err(app_error)? {
            // The code is spent here; the password, not the code, finishes this sign-in.
            if !self.sign_in_ports()?.store.close(phone, hash).await? {
                return Err(bad("PHONE_CODE_EXPIRED"));
            }
            return Ok(SignInOutcome::PasswordNeeded(user.id));
        }
        Ok(SignInOutcome::SignedIn(
            self.complete_sign_in(phone, hash, "", "").await?,
        ))
    }

    /// A device of the account whose password `App::check_password_sign_in` just proved (after
    /// a right code on the same auth key): the second half of a two-step sign-in.
    pub async fn complete_password_sign_in(&self, phone: &str) -> Result<LoginResult, AppError> {
        let (user, token) = self.accounts.login(phone, "", "").await?;
        Ok(LoginResult {
            user_id: user.id.get(),
            token,
        })
    }

    /// `auth.signUp`: a hash whose code was right, for a phone without an account, creates it.
    pub async fn sign_up(&self, req: &SignUp) -> Result<LoginResult, AppError> {
        let phone = normalize_phone(&req.phone_number)?;
        let hash = hash_of(&req.phone_code_hash)?;
        let first = check_name(
            &req.first_name,
            limits::MAX_FIRST_NAME_CODE_POINTS,
            DomainError::FirstNameInvalid,
            true,
        )?;
        let last = check_name(
            &req.last_name,
            limits::MAX_LAST_NAME_CODE_POINTS,
            DomainError::LastNameInvalid,
            false,
        )?;
        if !self.sign_in_ports()?.store.verified(&phone, hash).await? {
            return Err(bad("PHONE_CODE_EXPIRED"));
        }
        self.complete_sign_in(&phone, hash, &first, &last).await
    }

    /// The one step from "code accepted, account known (or being created)" to a signed-in device:
    /// the hash is consumed (so one code signs in one device) and a device token is issued. A
    /// further check (two-step verification) belongs here, before the hash is consumed.
    async fn complete_sign_in(
        &self,
        phone: &str,
        hash: &str,
        first_name: &str,
        last_name: &str,
    ) -> Result<LoginResult, AppError> {
        if !self.sign_in_ports()?.store.close(phone, hash).await? {
            // Another request consumed it first.
            return Err(bad("PHONE_CODE_EXPIRED"));
        }
        let (user, token) = self.accounts.login(phone, first_name, last_name).await?;
        Ok(LoginResult {
            user_id: user.id.get(),
            token,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_have_code_length_digits() {
        for _ in 0..200 {
            let c = random_code();
            assert_eq!(c.len(), CODE_LENGTH);
            assert!(c.chars().all(|d| d.is_ascii_digit()));
        }
    }

    #[test]
    fn hashes_are_random_hex_of_hash_bytes() {
        let (a, b) = (random_hash(), random_hash());
        assert_eq!(a.len(), MAX_HASH_CHARS);
        assert_ne!(a, b);
        assert!(hex::decode(&a).is_ok());
    }

    #[test]
    fn hash_bounds() {
        assert!(matches!(
            hash_of(""),
            Err(AppError::BadRequest("PHONE_CODE_HASH_EMPTY"))
        ));
        let at = "a".repeat(MAX_HASH_CHARS);
        assert!(hash_of(&at).is_ok());
        assert!(matches!(
            hash_of(&format!("{at}a")),
            Err(AppError::BadRequest("PHONE_CODE_EXPIRED"))
        ));
    }
}
