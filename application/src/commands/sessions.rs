//! `account.getAuthorizations`, `account.resetAuthorization`, `auth.resetAuthorizations`,
//! `auth.logOut` (and `POST /v1/auth/logout`): an account's devices, listed and ended. Ending a
//! device is one transaction in the store, which also tells every instance to close the device's
//! live connections (docs/security.md, "Sessions and devices").

use domain::AuthKeyId;
use serde::Deserialize;

use crate::devices::{Authorization, DeviceInfo, Ending};
use crate::error::AppError;
use crate::tl::{AccountAuthorizations, AuthorizationItem};
use crate::{App, Caller};

/// `account.resetAuthorization`'s parameters.
#[derive(Debug, Clone, Deserialize)]
pub struct ResetAuthorization {
    pub hash: i64,
}

impl App {
    /// The caller's account's devices, the caller's own first.
    pub async fn authorizations(&self, caller: &Caller) -> Result<Vec<Authorization>, AppError> {
        let mut all = self.accounts.authorizations(caller.user_id).await?;
        all.sort_by_key(|a| a.id != caller.auth_key_id);
        Ok(all)
    }

    /// `account.getAuthorizations`: the account's devices, the caller's own first and marked
    /// `current`.
    pub async fn get_authorizations(
        &self,
        caller: &Caller,
    ) -> Result<AccountAuthorizations, AppError> {
        let all = self.authorizations(caller).await?;
        Ok(AccountAuthorizations::new(
            all.iter()
                .map(|a| AuthorizationItem::of(a, a.id == caller.auth_key_id))
                .collect(),
        ))
    }

    /// What the caller's device says about itself (initConnection, the client's address).
    pub async fn record_device(
        &self,
        caller: &Caller,
        device: &DeviceInfo,
    ) -> Result<(), AppError> {
        Ok(self
            .accounts
            .record_device(caller.auth_key_id, device)
            .await?)
    }

    /// `auth.logOut`: ends the caller's own device.
    pub async fn log_out(&self, caller: &Caller) -> Result<(), AppError> {
        let ended = self
            .accounts
            .end_authorizations(caller.user_id, Ending::One(caller.auth_key_id))
            .await?;
        self.forget_devices(&ended);
        Ok(())
    }

    /// `account.resetAuthorization`: ends another device of the caller's account. Its own device
    /// (use `auth.logOut`) and a hash that is not one of the account's devices are `HASH_INVALID`.
    pub async fn reset_authorization(&self, caller: &Caller, hash: i64) -> Result<(), AppError> {
        if hash == caller.auth_key_id.0 || hash == 0 {
            return Err(AppError::BadRequest("HASH_INVALID"));
        }
        let ended = self
            .accounts
            .end_authorizations(caller.user_id, Ending::One(AuthKeyId(hash)))
            .await?;
        self.forget_devices(&ended);
        if ended.is_empty() {
            return Err(AppError::BadRequest("HASH_INVALID"));
        }
        Ok(())
    }

    /// `auth.resetAuthorizations`: ends every device of the account but the caller's.
    pub async fn reset_authorizations(&self, caller: &Caller) -> Result<usize, AppError> {
        let ended = self
            .accounts
            .end_authorizations(caller.user_id, Ending::AllBut(caller.auth_key_id))
            .await?;
        self.forget_devices(&ended);
        Ok(ended.len())
    }

    /// Ended devices leave this instance's token cache before the call answers; the other
    /// instances hear it from the database's revocation channel (caller_cache.rs).
    fn forget_devices(&self, ended: &[AuthKeyId]) {
        for device in ended {
            self.callers.evict_device(*device);
        }
    }
}
