//! `POST /v1/auth/sendCode`, `resendCode`, `cancelCode`, `signIn`, `signUp`: sign-in by code, the
//! same application handlers as MTProto's auth.* (code requests are limited per client IP here);
//! `getPassword`, `checkPassword`: the second step for an account with a password (a
//! `password_token` from signIn stands for the right code, as the auth key does over MTProto);
//! and `POST /v1/auth/login`, development sign-in by phone alone (only with `PTSLOG_DEV_LOGIN=true`).

use std::net::SocketAddr;

use application::commands::login::Login;
use application::commands::sign_in::SignInOutcome;
use application::commands::two_step::{TokenCheckPassword, TokenGetPassword, TwoStepError};
use application::login_codes::Requester;
use application::tl::RpcError;
use axum::body::Bytes;
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde_json::{json, Value};

use super::reply::{ok, RpcFailure};
use super::rpc::parse;
use super::HttpState;
use crate::calls::{JsonBody, SignInAnswer, SignInCall};

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

/// Serves the sign-in call `method` (the route names it): the request parsed as MTProto's is,
/// the same handler ([`SignInCall`]). For an account with a password, signIn answers
/// `401 SESSION_PASSWORD_NEEDED` whose body also carries the `password_token` that getPassword and
/// checkPassword take.
async fn serve(
    state: HttpState,
    peer: Peer,
    method: &str,
    body: &[u8],
) -> Result<Response, RpcFailure> {
    // Every route below names a sign-in method (the sign-in tests call each route).
    let call = SignInCall::parse(method, JsonBody(body))
        .unwrap_or_else(|| Err(RpcError::internal().into()))?;
    let answer = match call.run(&state.app, &requester(peer)).await? {
        SignInAnswer::SentCode(sent) => ok(&sent)?,
        SignInAnswer::Cancelled(cancelled) => ok(&cancelled)?,
        SignInAnswer::Outcome(SignInOutcome::PasswordNeeded(user)) => {
            let token = state
                .app
                .begin_token_password_sign_in(user)
                .await
                .map_err(two_step_error)?;
            let mut answer = ok(&RpcError::new(401, "SESSION_PASSWORD_NEEDED"))?;
            answer["password_token"] = json!(token.to_hex());
            return Ok((StatusCode::UNAUTHORIZED, Json(answer)).into_response());
        }
        SignInAnswer::Outcome(outcome) => ok(&outcome)?,
    };
    Ok(Json(answer).into_response())
}

/// `POST /v1/auth/sendCode`.
pub async fn send_code(
    State(state): State<HttpState>,
    peer: Peer,
    body: Bytes,
) -> Result<Response, RpcFailure> {
    serve(state, peer, "auth.sendCode", &body).await
}

/// `POST /v1/auth/resendCode`.
pub async fn resend_code(
    State(state): State<HttpState>,
    peer: Peer,
    body: Bytes,
) -> Result<Response, RpcFailure> {
    serve(state, peer, "auth.resendCode", &body).await
}

/// `POST /v1/auth/cancelCode`.
pub async fn cancel_code(
    State(state): State<HttpState>,
    peer: Peer,
    body: Bytes,
) -> Result<Response, RpcFailure> {
    serve(state, peer, "auth.cancelCode", &body).await
}

/// `POST /v1/auth/signIn`.
pub async fn sign_in(
    State(state): State<HttpState>,
    peer: Peer,
    body: Bytes,
) -> Result<Response, RpcFailure> {
    serve(state, peer, "auth.signIn", &body).await
}

/// `POST /v1/auth/signUp`.
pub async fn sign_up(
    State(state): State<HttpState>,
    peer: Peer,
    body: Bytes,
) -> Result<Response, RpcFailure> {
    serve(state, peer, "auth.signUp", &body).await
}

fn two_step_error(e: TwoStepError) -> RpcFailure {
    match e {
        TwoStepError::App(app) => RpcFailure::from(app),
        TwoStepError::NoPendingSignIn => RpcFailure(RpcError::new(400, "PASSWORD_TOKEN_INVALID")),
        e => RpcFailure(RpcError::from(&e)),
    }
}

/// `POST /v1/auth/getPassword`: account.password for the sign-in the token stands for.
pub async fn get_password(
    State(state): State<HttpState>,
    body: Bytes,
) -> Result<Json<Value>, RpcFailure> {
    let req: TokenGetPassword = parse(&body)?;
    let answer = state
        .app
        .token_get_password(&req.password_token)
        .await
        .map_err(two_step_error)?;
    Ok(Json(answer))
}

/// `POST /v1/auth/checkPassword`: the right proof signs the device in (signIn's answer).
pub async fn check_password(
    State(state): State<HttpState>,
    body: Bytes,
) -> Result<Json<Value>, RpcFailure> {
    let req: TokenCheckPassword = parse(&body)?;
    let app = &state.app;
    let phone = app
        .token_check_password(req)
        .await
        .map_err(two_step_error)?;
    let login = app
        .complete_password_sign_in(&phone)
        .await
        .map_err(RpcFailure::from)?;
    Ok(Json(ok(&SignInOutcome::SignedIn(login))?))
}
