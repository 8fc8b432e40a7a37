//! The calls served before a device is signed in (auth.sendCode, resendCode, cancelCode, signIn,
//! signUp), on the same path as the method table: each front hands its parameters to
//! [`SignInCall::parse`], which makes the application's typed request, and [`SignInCall::run`]
//! runs its handler. What follows a sign-in is the front's own business: the JSON API answers
//! the device's token, MTProto signs its auth key in as the new device.

use application::commands::sign_in::{CodeRef, SendCode, SentCode, SignIn, SignInOutcome, SignUp};
use application::login_codes::Requester;
use application::App;

use super::{Failure, Params};

/// Every sign-in method, by TL name.
pub const SIGN_IN_METHODS: &[&str] = &[
    "auth.sendCode",
    "auth.resendCode",
    "auth.cancelCode",
    "auth.signIn",
    "auth.signUp",
];

/// A sign-in call's typed parameters.
#[derive(Debug)]
pub enum SignInCall {
    SendCode(SendCode),
    ResendCode(CodeRef),
    CancelCode(CodeRef),
    SignIn(SignIn),
    SignUp(SignUp),
}

/// What a sign-in call answers, before a front renders it.
#[derive(Debug)]
pub enum SignInAnswer {
    /// sendCode and resendCode.
    SentCode(SentCode),
    /// cancelCode: whether a code was pending.
    Cancelled(bool),
    /// signIn (any outcome) and signUp (always signed in).
    Outcome(SignInOutcome),
}

impl SignInCall {
    /// The call of `method`, or `None` when it is not a sign-in method.
    pub fn parse(method: &str, params: impl Params) -> Option<Result<Self, Failure>> {
        Some(match method {
            "auth.sendCode" => params.parse().map(Self::SendCode),
            "auth.resendCode" => params.parse().map(Self::ResendCode),
            "auth.cancelCode" => params.parse().map(Self::CancelCode),
            "auth.signIn" => params.parse().map(Self::SignIn),
            "auth.signUp" => params.parse().map(Self::SignUp),
            _ => return None,
        })
    }

    /// Runs the handler. Code requests (sendCode, resendCode) are counted against `requester`.
    pub async fn run(self, app: &App, requester: &Requester) -> Result<SignInAnswer, Failure> {
        Ok(match self {
            Self::SendCode(r) => SignInAnswer::SentCode(app.send_code(&r, requester).await?),
            Self::ResendCode(r) => SignInAnswer::SentCode(app.resend_code(&r, requester).await?),
            Self::CancelCode(r) => SignInAnswer::Cancelled(app.cancel_code(&r).await?),
            Self::SignIn(r) => SignInAnswer::Outcome(app.sign_in(&r).await?),
            Self::SignUp(r) => {
                SignInAnswer::Outcome(SignInOutcome::SignedIn(app.sign_up(&r).await?))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::JsonBody;
    use super::*;

    #[test]
    fn every_sign_in_method_parses_by_name_and_nothing_else_does() {
        for method in SIGN_IN_METHODS {
            let parsed = SignInCall::parse(method, json!({"phone_number": "+15550000001"}));
            assert!(matches!(parsed, Some(Ok(_))), "{method}");
        }
        for method in [
            "auth.logOut",
            "auth.bindTempAuthKey",
            "messages.getHistory",
            "",
        ] {
            assert!(SignInCall::parse(method, json!({})).is_none(), "{method}");
        }
    }

    #[test]
    fn a_missing_or_mistyped_parameter_is_input_request_invalid_on_both_fronts() {
        for (method, params) in [
            ("auth.sendCode", json!({})),
            ("auth.signIn", json!({"phone_number": 15550000001_i64})),
            (
                "auth.signUp",
                json!({"phone_number": "+1555", "first_name": ["x"]}),
            ),
        ] {
            let bytes = serde_json::to_vec(&params).unwrap();
            for parsed in [
                SignInCall::parse(method, params.clone()),
                SignInCall::parse(method, JsonBody(&bytes)),
            ] {
                match parsed {
                    Some(Err(Failure(e))) => {
                        assert_eq!(
                            (e.error_code, &*e.error_message),
                            (400, "INPUT_REQUEST_INVALID")
                        )
                    }
                    other => panic!("{method} {params}: {other:?}"),
                }
            }
        }
    }
}
