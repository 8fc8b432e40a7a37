//! `account.authorizations`: an account's devices as `account.getAuthorizations` lists them.

use serde::Serialize;

use crate::devices::{Authorization, TOKEN_LIFETIME_DAYS};

/// TL `authorization`: one device.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "authorization")]
pub struct AuthorizationItem {
    pub current: bool,
    pub hash: i64,
    pub device_model: String,
    pub platform: String,
    pub system_version: String,
    pub api_id: i32,
    pub app_name: String,
    pub app_version: String,
    pub date_created: i64,
    pub date_active: i64,
    pub ip: String,
    pub country: String,
    pub region: String,
}

impl AuthorizationItem {
    pub fn of(a: &Authorization, current: bool) -> Self {
        let d = &a.device;
        Self {
            current,
            hash: a.id.0,
            device_model: d.device_model.as_str().to_string(),
            platform: d.platform.as_str().to_string(),
            system_version: d.system_version.as_str().to_string(),
            api_id: d.api_id,
            app_name: String::new(),
            app_version: d.app_version.as_str().to_string(),
            date_created: a.created_at,
            date_active: a.active_at,
            ip: d.ip.as_str().to_string(),
            country: String::new(),
            region: String::new(),
        }
    }
}

/// `account.authorizations`, with the token lifetime as `authorization_ttl_days`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "_", rename = "account.authorizations")]
pub struct AccountAuthorizations {
    pub authorization_ttl_days: i32,
    pub authorizations: Vec<AuthorizationItem>,
}

impl AccountAuthorizations {
    pub fn new(authorizations: Vec<AuthorizationItem>) -> Self {
        Self {
            authorization_ttl_days: TOKEN_LIFETIME_DAYS,
            authorizations,
        }
    }
}
