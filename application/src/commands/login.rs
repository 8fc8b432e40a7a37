//! `POST /v1/auth/login`: development sign-in by phone alone, refused (`SIGN_IN_DISABLED`) unless
//! `PTSLOG_DEV_LOGIN=true`. The same phone is the same account; every login is a new device with
//! its own authorization. Production sign-in is by code: [`crate::commands::sign_in`].

use domain::{limits, DomainError};
use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::App;

#[derive(Debug, Clone, Deserialize)]
pub struct Login {
    pub phone: String,
    #[serde(default)]
    pub first_name: String,
    #[serde(default)]
    pub last_name: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct LoginResult {
    pub user_id: i64,
    pub token: String,
}

/// `+` and 5 to 15 digits after dropping spaces, dashes and brackets.
pub fn normalize_phone(raw: &str) -> Result<String, DomainError> {
    let digits: String = raw
        .chars()
        .filter(|c| !matches!(c, ' ' | '-' | '(' | ')' | '+'))
        .collect();
    let plus_only_at_start = raw.trim().trim_start_matches('+').chars().all(|c| c != '+');
    if !plus_only_at_start
        || !(5..=15).contains(&digits.len())
        || !digits.chars().all(|c| c.is_ascii_digit())
    {
        return Err(DomainError::PhoneNumberInvalid);
    }
    Ok(format!("+{digits}"))
}

pub(crate) fn check_name(
    raw: &str,
    max: usize,
    err: DomainError,
    required: bool,
) -> Result<String, DomainError> {
    let name = raw.trim();
    if (required && name.is_empty())
        || name.chars().count() > max
        || name.chars().any(char::is_control)
    {
        return Err(err);
    }
    Ok(name.to_string())
}

impl App {
    /// Whether an account with this phone exists (MTProto's auth.signIn answers "sign up
    /// required" for a new phone).
    pub async fn phone_registered(&self, phone: &str) -> Result<bool, AppError> {
        let phone = normalize_phone(phone)?;
        Ok(self.store.user_by_phone(&phone).await?.is_some())
    }

    /// Whether development sign-in (by phone alone, or with the development code) is on.
    pub fn dev_login(&self) -> bool {
        self.config.dev_login
    }

    pub async fn login(&self, req: Login) -> Result<LoginResult, AppError> {
        if !self.config.dev_login {
            return Err(AppError::Forbidden("SIGN_IN_DISABLED"));
        }
        let phone = normalize_phone(&req.phone)?;
        let existing = self.store.user_by_phone(&phone).await?;
        // Names matter only when the phone is new; an existing account keeps its names.
        let (first, last) = if existing.is_some() {
            (String::new(), String::new())
        } else {
            (
                check_name(
                    &req.first_name,
                    limits::MAX_FIRST_NAME_CODE_POINTS,
                    DomainError::FirstNameInvalid,
                    true,
                )?,
                check_name(
                    &req.last_name,
                    limits::MAX_LAST_NAME_CODE_POINTS,
                    DomainError::LastNameInvalid,
                    false,
                )?,
            )
        };
        let (user, token) = self.accounts.login(&phone, &first, &last).await?;
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
    fn phones_normalize_to_plus_digits() {
        assert_eq!(normalize_phone("+1 555-0001").unwrap(), "+15550001");
        assert_eq!(normalize_phone("15550001").unwrap(), "+15550001");
        assert_eq!(normalize_phone("+12"), Err(DomainError::PhoneNumberInvalid));
        assert_eq!(
            normalize_phone("+1555abc0001"),
            Err(DomainError::PhoneNumberInvalid)
        );
        assert_eq!(
            normalize_phone("+1555+0001"),
            Err(DomainError::PhoneNumberInvalid)
        );
        assert_eq!(
            normalize_phone(&"1".repeat(16)),
            Err(DomainError::PhoneNumberInvalid)
        );
    }

    #[test]
    fn first_name_limit() {
        let at = "ж".repeat(limits::MAX_FIRST_NAME_CODE_POINTS);
        assert!(check_name(
            &at,
            limits::MAX_FIRST_NAME_CODE_POINTS,
            DomainError::FirstNameInvalid,
            true
        )
        .is_ok());
        let over = "ж".repeat(limits::MAX_FIRST_NAME_CODE_POINTS + 1);
        assert_eq!(
            check_name(
                &over,
                limits::MAX_FIRST_NAME_CODE_POINTS,
                DomainError::FirstNameInvalid,
                true
            ),
            Err(DomainError::FirstNameInvalid)
        );
        assert_eq!(
            check_name(" ", 64, DomainError::FirstNameInvalid, true),
            Err(DomainError::FirstNameInvalid)
        );
    }
}
