//! `POST /v1/auth/sendCode`, `resendCode`, `cancelCode`, `signIn`, `signUp`: sign-in by code, the
//! same application handlers as MTProto's auth.* (code requests are limited per client IP here);
//! and `POST /v1/auth/login`, development sign-in by phone alone (only with `PTSLOG_DEV_LOGIN=true`).

use std::net::SocketAddr;

use application::commands::login::Login;
use application::commands::sign_in::{CodeRef, SendCode, SignIn, SignInOutcome, SignUp};
use application::login_codes::Requester;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::{Extension, Json};
use serde_json::{json, Value};

use super::reply::{ok, RpcFailure};
use super::rpc::parse;
use super::HttpState;

type Peer = Option<Extension<ConnectInfo<SocketAddr>>>;

/// The client's address (the TCP peer: a reverse proxy in front makes every client one requester,
/// docs/security.md).
fn requester(peer: Peer) -> Requester {
    match peer {
        Some(Extension(ConnectInfo(addr))) => Requester::ip(addr.ip()),
        None => Requester::ip(std::net::Ipv4Addr::UNSPECIFIED.into()),
    }
}

/// `POST /v1/auth/login`.
pub async fn login(State(state): State<HttpState>, body: Bytes) -> Result<Json<Value>, RpcFailure> {
    let req: Login = parse(&body)?;
    let result = state.app.login(req).await?;
    Ok(Json(ok(&result)?))
}

/// `POST /v1/auth/sendCode`.
pub async fn send_code(
    State(state): State<HttpState>,
    peer: Peer,
    body: Bytes,
) -> Result<Json<Value>, RpcFailure> {
    let req: SendCode = parse(&body)?;
    let sent = state.app.send_code(&req, &requester(peer)).await?;
    Ok(Json(ok(&sent)?))
}

/// `POST /v1/auth/resendCode`.
pub async fn resend_code(
    State(state): State<HttpState>,
    peer: Peer,
    body: Bytes,
) -> Result<Json<Value>, RpcFailure> {
    let req: CodeRef = parse(&body)?;
    let sent = state.app.resend_code(&req, &requester(peer)).await?;
    Ok(Json(ok(&sent)?))
}

/// `POST /v1/auth/cancelCode`.
pub async fn cancel_code(
    State(state): State<HttpState>,
    body: Bytes,
) -> Result<Json<Value>, RpcFailure> {
    let req: CodeRef = parse(&body)?;
    let cancelled = state.app.cancel_code(&req).await?;
    Ok(Json(ok(&json!(cancelled))?))
}

/// `POST /v1/auth/signIn`.
pub async fn sign_in(
    State(state): State<HttpState>,
    body: Bytes,
) -> Result<Json<Value>, RpcFailure> {
    let req: SignIn = parse(&body)?;
    let outcome = state.app.sign_in(&req).await?;
    if let SignInOutcome::PasswordNeeded(_) = outcome {
        // The JSON API has no auth.checkPassword yet: an account with a password cannot sign in
        // here (never around its password).
        return Err(RpcFailure(application::tl::RpcError::new(
            401,
            "SESSION_PASSWORD_NEEDED",
        )));
    }
    Ok(Json(ok(&outcome)?))
}

/// `POST /v1/auth/signUp`.
pub async fn sign_up(
    State(state): State<HttpState>,
    body: Bytes,
) -> Result<Json<Value>, RpcFailure> {
    let req: SignUp = parse(&body)?;
    let result = state.app.sign_up(&req).await?;
    Ok(Json(ok(&SignInOutcome::SignedIn(result))?))
}
