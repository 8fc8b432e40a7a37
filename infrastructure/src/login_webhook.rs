//! The webhook [`LoginCodes`] provider: each code is POSTed as JSON to an operator URL
//! (`PTSLOG_LOGIN_WEBHOOK_URL`), which hands it to an SMS gateway. Any 2xx answer is a delivery;
//! anything else, or no answer within [`WEBHOOK_TIMEOUT`], fails the send
//! (`SMS_CODE_CREATE_FAILED`) and the code is discarded.

use std::time::Duration;

use application::login_codes::{CodeChannel, DeliveryError, LoginCodes};
use async_trait::async_trait;
use serde::Serialize;

/// The most one delivery may take, connecting included: an SMS gateway's API answers in well
/// under a second; past this the client gets an error instead of waiting on a stuck gateway.
pub const WEBHOOK_TIMEOUT: Duration = Duration::from_secs(5);

/// The body posted for each code.
#[derive(Debug, Serialize)]
struct CodeMessage<'a> {
    phone: &'a str,
    code: &'a str,
    phone_code_hash: &'a str,
    /// Seconds the code is valid, for the message text.
    expires_in: u64,
}

pub struct WebhookCodes {
    client: reqwest::Client,
    url: url::Url,
    lifetime: Duration,
}

impl WebhookCodes {
    /// `url` must be `http` or `https`; `lifetime` is put in each message.
    pub fn new(url: &str, lifetime: Duration) -> Result<Self, DeliveryError> {
        let url = url::Url::parse(url).map_err(|e| DeliveryError(format!("{url:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(DeliveryError(format!("{url}: not an http(s) URL")));
        }
        let client = reqwest::Client::builder()
            .timeout(WEBHOOK_TIMEOUT)
            .connect_timeout(WEBHOOK_TIMEOUT)
            // A redirect could send codes elsewhere: the operator's URL is the only target.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| DeliveryError(e.to_string()))?;
        Ok(Self {
            client,
            url,
            lifetime,
        })
    }
}

#[async_trait]
impl LoginCodes for WebhookCodes {
    fn channel(&self) -> CodeChannel {
        CodeChannel::Sms
    }

    async fn deliver(&self, phone: &str, code: &str, hash: &str) -> Result<(), DeliveryError> {
        let body = CodeMessage {
            phone,
            code,
            phone_code_hash: hash,
            expires_in: self.lifetime.as_secs(),
        };
        let resp = self
            .client
            .post(self.url.clone())
            .json(&body)
            .send()
            .await
            // The error text can hold the URL, never the code.
            .map_err(|e| DeliveryError(e.without_url().to_string()))?;
        if !resp.status().is_success() {
            return Err(DeliveryError(format!(
                "the webhook answered {}",
                resp.status()
            )));
        }
        Ok(())
    }
}
