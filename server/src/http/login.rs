use application::commands::login::Login;
use axum::body::Bytes;
use axum::extract::State;
use axum::Json;

use super::reply::{ok, RpcFailure};
use super::rpc::parse;
use super::HttpState;

/// `POST /v1/auth/login`.
pub async fn login(
    State(state): State<HttpState>,
    body: Bytes,
) -> Result<Json<serde_json::Value>, RpcFailure> {
    let req: Login = parse(&body)?;
    let result = state.app.login(req).await?;
    Ok(Json(ok(&result)?))
}
