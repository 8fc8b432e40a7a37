//! Resolving a bearer token to the device it was issued to: from the in-process cache when it is
//! live (no round trip), else from the store, caching what it answers (caller_cache.rs).

use crate::error::AppError;
use crate::{App, Caller};

impl App {
    pub async fn authenticate(&self, token: &str) -> Result<Option<Caller>, AppError> {
        let miss = match self.callers.get(token) {
            Ok(caller) => return Ok(Some(caller)),
            Err(miss) => miss,
        };
        let found = self.accounts.authenticate_until(token).await?;
        Ok(found.map(|(caller, ends_in)| {
            self.callers.insert(miss, caller, ends_in);
            caller
        }))
    }
}
