//! Why a call was refused: the TL error both fronts answer (the JSON API as its status and body,
//! MTProto as `rpc_error`), with storage failures logged once, here.

use application::commands::two_step::TwoStepError;
use application::tl::RpcError;
use application::AppError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure(pub RpcError);

impl From<RpcError> for Failure {
    fn from(e: RpcError) -> Self {
        Failure(e)
    }
}

impl From<AppError> for Failure {
    fn from(e: AppError) -> Self {
        if let AppError::Store(inner) = &e {
            tracing::error!(error = %inner, "storage failure");
        }
        Failure(RpcError::from(&e))
    }
}

impl From<TwoStepError> for Failure {
    fn from(e: TwoStepError) -> Self {
        if let TwoStepError::App(AppError::Store(inner)) = &e {
            tracing::error!(error = %inner, "storage failure (two-step verification)");
        }
        Failure(RpcError::from(&e))
    }
}
