//! Two-step verification over MTProto (application::commands::two_step does the work): a
//! sign-in whose code was right answers `401 SESSION_PASSWORD_NEEDED` when the account has a
//! password and remembers, per auth key and for a while, that this key gave the code; then
//! account.getPassword (served to that key before it is signed in) and auth.checkPassword
//! finish the sign-in. A signed-in connection's account.getPassword and
//! account.updatePasswordSettings go through the method table (`crate::calls`) like every other
//! call.

use application::commands::two_step::{CheckPassword, TwoStepError};
use application::tl::RpcError;
use application::AppError;
use domain::UserId;
use serde_json::Value;

use super::calls::CallError;
use super::connection::Conn;
use super::sign_in;

/// Served to a connection that has not signed in (besides `auth.*`): the key's waiting sign-in
/// needs the SRP parameters.
pub(super) const BEFORE_SIGN_IN: &[&str] = &["account.getPassword"];

fn error(e: TwoStepError) -> CallError {
    if let TwoStepError::App(AppError::Store(inner)) = &e {
        tracing::error!(error = %inner, "storage failure (two-step verification)");
    }
    CallError::from(RpcError::from(&e))
}

fn key_id(conn: &Conn) -> Result<i64, CallError> {
    conn.key
        .as_ref()
        .map(|k| k.auth_key.id())
        .ok_or_else(|| CallError::new(401, "AUTH_KEY_UNREGISTERED"))
}

/// After a right code for `user`'s account, which has a password: remembers that this key
/// passed the code, so that auth.checkPassword may finish the sign-in.
pub(super) async fn password_needed(conn: &Conn, user: UserId) -> Result<(), CallError> {
    conn.front
        .app
        .begin_password_sign_in(key_id(conn)?, user)
        .await
        .map_err(error)
}

/// The calls this module answers itself; `None` for every other.
pub(super) async fn call(
    conn: &mut Conn,
    name: &str,
    request: &Value,
) -> Option<Result<Value, CallError>> {
    match name {
        "account.getPassword" if conn.caller.is_none() => Some(get_password(conn).await),
        "auth.checkPassword" => Some(check_password(conn, request).await),
        _ => None,
    }
}

async fn get_password(conn: &Conn) -> Result<Value, CallError> {
    let app = &conn.front.app;
    let user = app
        .pending_password_sign_in(key_id(conn)?)
        .await
        .map_err(error)?
        .ok_or_else(|| CallError::new(401, "AUTH_KEY_UNREGISTERED"))?;
    app.get_password(user).await.map_err(error)
}

async fn check_password(conn: &mut Conn, request: &Value) -> Result<Value, CallError> {
    let req: CheckPassword = serde_json::from_value(request.clone())
        .map_err(|_| CallError::new(400, "INPUT_REQUEST_INVALID"))?;
    let app = conn.front.app.clone();
    let phone = app
        .check_password_sign_in(key_id(conn)?, req)
        .await
        .map_err(error)?;
    let login = app
        .complete_password_sign_in(&phone)
        .await
        .map_err(|e| CallError::from(RpcError::from(&e)))?;
    sign_in::complete(conn, login).await
}
