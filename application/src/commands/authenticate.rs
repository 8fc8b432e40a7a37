//! Resolving a bearer token to the device it was issued to.

use crate::error::AppError;
use crate::{App, Caller};

impl App {
    pub async fn authenticate(&self, token: &str) -> Result<Option<Caller>, AppError> {
        Ok(self.accounts.authenticate(token).await?)
    }
}
