//! Turning handler results into HTTP answers: the TL object as JSON, or `rpc_error` with the TL
//! error code as the status.

use application::tl::RpcError;
use application::AppError;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Serialize;

pub struct RpcFailure(pub RpcError);

impl From<AppError> for RpcFailure {
    fn from(e: AppError) -> Self {
        match &e {
            AppError::Store(inner) => tracing::error!(error = %inner, "storage failure"),
            AppError::Blob(inner) => tracing::error!(error = %inner, "blob store failure"),
            _ => {}
        }
        RpcFailure(RpcError::from(&e))
    }
}

impl From<crate::calls::Failure> for RpcFailure {
    fn from(e: crate::calls::Failure) -> Self {
        RpcFailure(e.0)
    }
}

impl IntoResponse for RpcFailure {
    fn into_response(self) -> Response {
        let status =
            StatusCode::from_u16(self.0.error_code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(self.0)).into_response()
    }
}

/// Serializes an answer; the TL objects are plain data, so this cannot fail in practice.
pub fn ok<T: Serialize>(value: &T) -> Result<serde_json::Value, RpcFailure> {
    serde_json::to_value(value).map_err(|e| {
        tracing::error!(error = %e, "answer did not serialize");
        RpcFailure(RpcError::internal())
    })
}
