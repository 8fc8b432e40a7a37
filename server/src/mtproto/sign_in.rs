//! auth.sendCode / signIn / signUp / logOut over MTProto, on the same accounts as
//! `POST /v1/auth/login` (the same phone is the same account; each signed-in auth key is a
//! device with its own authorization).
//!
//! Codes come from the front's [`LoginCodes`](super::LoginCodes) provider: while development
//! sign-in is on (`PTSLOG_DEV_LOGIN`), the code is `PTSLOG_DEV_LOGIN_CODE` (default 12345) for
//! every phone; with it off and no provider, auth.sendCode answers `PHONE_CODE_PROVIDER_MISSING`
//! (docs/mtproto.md).

use application::commands::login::{normalize_phone, Login};
use application::tl::RpcError;
use application::AppError;
use mtproto::crypto::{sha256, AuthKey};
use mtproto::session::decrypt_v1;
use mtproto::tl::Reader;
use serde_json::{json, Value};

use super::calls::CallError;
use super::connection::Conn;
use crate::http::rpc::dispatch;

fn app_error(e: AppError) -> CallError {
    if let AppError::Store(inner) = &e {
        tracing::error!(error = %inner, "storage failure");
    }
    CallError::from(RpcError::from(&e))
}

fn phone(request: &Value) -> Result<String, CallError> {
    normalize_phone(request["phone_number"].as_str().unwrap_or_default())
        .map_err(|_| CallError::new(400, "PHONE_NUMBER_INVALID"))
}

/// A phone_code_hash that needs no server-side state: it binds the code request to the phone and
/// to this server's key.
fn code_hash(conn: &Conn, phone: &str) -> String {
    let secret = conn.front.server_key.fingerprint().to_le_bytes();
    hex::encode(&sha256(&[b"ptslog-code", &secret, phone.as_bytes()])[..10])
}

async fn send_code(conn: &Conn, phone: &str) -> Result<Value, CallError> {
    let Some(codes) = &conn.front.codes else {
        return Err(CallError::new(400, "PHONE_CODE_PROVIDER_MISSING"));
    };
    let length = codes
        .send(phone)
        .await
        .map_err(|e| CallError::new(400, e))?;
    Ok(json!({
        "_": "auth.sentCode",
        "type": {"_": "auth.sentCodeTypeApp", "length": length},
        "phone_code_hash": code_hash(conn, phone),
    }))
}

async fn code_ok(conn: &Conn, phone: &str, code: &str) -> bool {
    match &conn.front.codes {
        Some(codes) => codes.check(phone, code).await,
        None => false,
    }
}

fn check_hash(conn: &Conn, phone: &str, request: &Value) -> Result<(), CallError> {
    match request["phone_code_hash"].as_str() {
        None | Some("") => Err(CallError::new(400, "PHONE_CODE_HASH_EMPTY")),
        Some(h) if h == code_hash(conn, phone) => Ok(()),
        Some(_) => Err(CallError::new(400, "PHONE_CODE_EXPIRED")),
    }
}

pub(super) async fn call(conn: &mut Conn, name: &str, request: &Value) -> Result<Value, CallError> {
    match name {
        "auth.sendCode" | "auth.resendCode" => {
            let phone = phone(request)?;
            send_code(conn, &phone).await
        }
        "auth.cancelCode" => Ok(json!(true)),
        "auth.signIn" => {
            let phone = phone(request)?;
            check_hash(conn, &phone, request)?;
            let code = request["phone_code"].as_str().unwrap_or_default();
            if code.is_empty() {
                return Err(CallError::new(400, "PHONE_CODE_EMPTY"));
            }
            if !code_ok(conn, &phone, code).await {
                return Err(CallError::new(400, "PHONE_CODE_INVALID"));
            }
            if !conn
                .front
                .app
                .phone_registered(&phone)
                .await
                .map_err(app_error)?
            {
                conn.verified_phone = Some(phone);
                return Ok(json!({"_": "auth.authorizationSignUpRequired"}));
            }
            // Two-step verification: the right code alone does not sign an account with a
            // password in; auth.checkPassword finishes it (two_step.rs).
            if super::two_step::password_needed(conn, &phone).await? {
                return Err(CallError::new(401, "SESSION_PASSWORD_NEEDED"));
            }
            complete(conn, phone, "", "").await
        }
        "auth.signUp" => {
            let phone = phone(request)?;
            check_hash(conn, &phone, request)?;
            if conn.verified_phone.as_deref() != Some(phone.as_str()) {
                return Err(CallError::new(400, "PHONE_CODE_EMPTY"));
            }
            complete(
                conn,
                phone,
                request["first_name"].as_str().unwrap_or_default(),
                request["last_name"].as_str().unwrap_or_default(),
            )
            .await
        }
        "auth.logOut" => {
            if let Some(key) = &conn.key {
                conn.front
                    .keys
                    .set_authorization(key.auth_key.id(), None)
                    .await
                    .map_err(|e| {
                        tracing::error!(error = %e, "signing an MTProto key out");
                        CallError::new(500, "INTERNAL")
                    })?;
            }
            conn.sign_out();
            Ok(json!({"_": "auth.loggedOut"}))
        }
        "auth.bindTempAuthKey" => bind_temp_auth_key(conn, request).await,
        _ => Err(CallError::new(400, "METHOD_INVALID")),
    }
}

const BIND_AUTH_KEY_INNER: u32 = 0x75a3f765;

/// auth.bindTempAuthKey: the binding message, encrypted (MTProto 1.0) with the permanent key,
/// must name this temporary key, this session, this call's msg_id and the same nonce and expiry.
async fn bind_temp_auth_key(conn: &mut Conn, request: &Value) -> Result<Value, CallError> {
    let invalid = || CallError::new(400, "ENCRYPTED_MESSAGE_INVALID");
    let perm_id = request["perm_auth_key_id"].as_i64().ok_or_else(invalid)?;
    let nonce = request["nonce"].as_i64().ok_or_else(invalid)?;
    let expires_at = request["expires_at"].as_i64().ok_or_else(invalid)?;
    let message = request["encrypted_message"]
        .as_str()
        .and_then(|h| hex::decode(h).ok())
        .ok_or_else(invalid)?;
    let temp_id = conn
        .key
        .as_ref()
        .map(|k| k.auth_key.id())
        .ok_or_else(invalid)?;
    let session_id = conn.session.as_ref().map(|s| s.id).ok_or_else(invalid)?;
    let storage = |e: sqlx::Error| {
        tracing::error!(error = %e, "binding a temporary key");
        CallError::new(500, "INTERNAL")
    };
    let perm = conn
        .front
        .keys
        .load(perm_id)
        .await
        .map_err(storage)?
        .filter(|k| !k.temporary())
        .and_then(|k| AuthKey::from_slice(&k.auth_key))
        .ok_or_else(|| CallError::new(400, "PERM_AUTH_KEY_INVALID"))?;
    let m = decrypt_v1(&perm, &message).map_err(|_| invalid())?;
    let mut r = Reader::new(&m.body);
    let fields = (|| -> Result<_, mtproto::tl::TlError> {
        Ok((r.u32()?, r.i64()?, r.i64()?, r.i64()?, r.i64()?, r.i32()?))
    })()
    .map_err(|_| invalid())?;
    let expected = (
        BIND_AUTH_KEY_INNER,
        nonce,
        temp_id,
        perm_id,
        session_id,
        expires_at as i32,
    );
    if fields != expected || m.msg_id != conn.current_msg_id {
        return Err(invalid());
    }
    let bound = conn
        .front
        .keys
        .bind_temp(temp_id, perm_id, expires_at as i32)
        .await
        .map_err(storage)?;
    if !bound {
        return Err(CallError::new(400, "TEMP_AUTH_KEY_EMPTY"));
    }
    conn.refresh_sign_in().await.map_err(storage)?;
    Ok(json!(true))
}

/// Signs the connection's key in as a new device of the phone's account.
pub(super) async fn complete(
    conn: &mut Conn,
    phone: String,
    first_name: &str,
    last_name: &str,
) -> Result<Value, CallError> {
    let key_id = conn
        .key
        .as_ref()
        .map(|k| k.auth_key.id())
        .ok_or_else(|| CallError::new(401, "AUTH_KEY_UNREGISTERED"))?;
    let app = conn.front.app.clone();
    let login = app
        .login(Login {
            phone,
            first_name: first_name.to_string(),
            last_name: last_name.to_string(),
        })
        .await
        .map_err(app_error)?;
    let caller = app
        .authenticate(&login.token)
        .await
        .map_err(app_error)?
        .ok_or_else(|| CallError::new(500, "INTERNAL"))?;
    conn.front
        .keys
        .set_authorization(key_id, Some(caller.auth_key_id.0))
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "signing an MTProto key in");
            CallError::new(500, "INTERNAL")
        })?;
    conn.sign_in(caller);
    conn.verified_phone = None;
    let users = dispatch(
        &app,
        &caller,
        "users.getUsers",
        br#"{"id":[{"_":"inputUserSelf"}]}"#,
    )
    .await
    .map_err(|e| CallError::from(e.0))?;
    Ok(json!({"_": "auth.authorization", "user": users[0]}))
}
