//! auth.sendCode / resendCode / cancelCode / signIn / signUp / logOut over MTProto, through the
//! same application handlers as `POST /v1/auth/sendCode` and `POST /v1/auth/signIn`
//! ([`application::commands::sign_in`]): the same phone is the same account; each signed-in auth
//! key is a device with its own authorization. Code requests are limited per auth key (the
//! requester) and per phone (docs/security.md, "Sign-in codes").

use application::commands::login::LoginResult;
use application::commands::sign_in::{SentCode, SignInOutcome};
use application::login_codes::{CodeChannel, Requester};
use application::queries::get_users::GetUsers;
use application::tl::{InputUser, RpcError};
use application::AppError;
use mtproto::crypto::AuthKey;
use mtproto::session::decrypt_v1;
use mtproto::tl::Reader;
use serde_json::{json, Value};

use super::calls::CallError;
use super::connection::Conn;
use crate::calls::{SignInAnswer, SignInCall};

fn app_error(e: AppError) -> CallError {
    if let AppError::Store(inner) = &e {
        tracing::error!(error = %inner, "storage failure");
    }
    CallError::from(RpcError::from(&e))
}

/// Code requests are counted per auth key: the key a client signs in with.
fn requester(conn: &Conn) -> Result<Requester, CallError> {
    conn.key
        .as_ref()
        .map(|k| Requester::auth_key(k.auth_key.id()))
        .ok_or_else(|| CallError::new(401, "AUTH_KEY_UNREGISTERED"))
}

/// `auth.sentCode`: the type the code went by, and the type a resend would use.
fn sent_code(sent: SentCode) -> Value {
    let kind = match sent.channel {
        CodeChannel::App => "auth.sentCodeTypeApp",
        CodeChannel::Sms => "auth.sentCodeTypeSms",
    };
    json!({
        "_": "auth.sentCode",
        "type": {"_": kind, "length": sent.length},
        "phone_code_hash": sent.phone_code_hash,
        "next_type": {"_": "auth.codeTypeSms"},
        "timeout": sent.timeout,
    })
}

pub(super) async fn call(conn: &mut Conn, name: &str, request: Value) -> Result<Value, CallError> {
    let app = conn.front.app.clone();
    if let Some(parsed) = SignInCall::parse(name, request.clone()) {
        let requester = requester(conn)?;
        let answer = parsed
            .map_err(|f| CallError::from(f.0))?
            .run(&app, &requester)
            .await
            .map_err(|f| CallError::from(f.0))?;
        return match answer {
            SignInAnswer::SentCode(sent) => Ok(sent_code(sent)),
            SignInAnswer::Cancelled(cancelled) => Ok(json!(cancelled)),
            SignInAnswer::Outcome(SignInOutcome::SignedIn(login)) => complete(conn, login).await,
            SignInAnswer::Outcome(SignInOutcome::SignUpRequired) => {
                Ok(json!({"_": "auth.authorizationSignUpRequired"}))
            }
            // Two-step verification: this key passed the code; auth.checkPassword finishes
            // the sign-in (two_step.rs).
            SignInAnswer::Outcome(SignInOutcome::PasswordNeeded(user)) => {
                super::two_step::password_needed(conn, user).await?;
                Err(CallError::new(401, "SESSION_PASSWORD_NEEDED"))
            }
        };
    }
    match name {
        "auth.logOut" => {
            // Ends the device everywhere (its token, every key signed in as it, its live
            // connections on every instance), then this key, in case it was not signed in.
            if let Some(caller) = conn.caller {
                conn.sign_out();
                conn.front.app.log_out(&caller).await.map_err(app_error)?;
            }
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
        "auth.bindTempAuthKey" => bind_temp_auth_key(conn, &request).await,
        "auth.resetAuthorizations" => {
            let caller = conn
                .caller
                .ok_or_else(|| CallError::new(401, "AUTH_KEY_UNREGISTERED"))?;
            conn.front
                .app
                .reset_authorizations(&caller)
                .await
                .map_err(app_error)?;
            Ok(json!(true))
        }
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

/// Signs the connection's key in as the device the application just created.
pub(super) async fn complete(conn: &mut Conn, login: LoginResult) -> Result<Value, CallError> {
    let key_id = conn
        .key
        .as_ref()
        .map(|k| k.auth_key.id())
        .ok_or_else(|| CallError::new(401, "AUTH_KEY_UNREGISTERED"))?;
    let app = conn.front.app.clone();
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
    conn.record_device().await;
    let me = app
        .get_users(
            &caller,
            GetUsers {
                id: vec![InputUser::SelfUser],
            },
        )
        .await
        .map_err(app_error)?;
    Ok(json!({"_": "auth.authorization", "user": me.first()}))
}
