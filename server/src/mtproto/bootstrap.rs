//! Answers to the calls clients make while starting up (configuration, language packs, terms of
//! service, …): valid defaults, so no client stops on an error it does not expect. These need no
//! account.

use serde_json::{json, Value};

use super::connection::{now_ms, Conn};

/// The DC id this server calls itself; every DC id in the config points back here.
pub const THIS_DC: i32 = 2;

pub(super) fn answer(conn: &Conn, name: &str, request: &Value) -> Option<Value> {
    let now = now_ms() / 1000;
    Some(match name {
        "help.getConfig" => config(conn, now),
        "help.getNearestDc" => json!({"_": "nearestDc", "country": "US",
            "this_dc": THIS_DC, "nearest_dc": THIS_DC}),
        "help.getAppConfig" => json!({"_": "help.appConfig", "hash": 0,
            "config": {"_": "jsonObject", "value": []}}),
        "help.getCountriesList" => json!({"_": "help.countriesList", "countries": [], "hash": 0}),
        "help.getTermsOfServiceUpdate" => {
            json!({"_": "help.termsOfServiceUpdateEmpty", "expires": now + 86400})
        }
        "help.getPromoData" => json!({"_": "help.promoDataEmpty", "expires": now + 3600}),
        "help.getInviteText" => json!({"_": "help.inviteText", "message": "Join me on ptslog"}),
        "help.getCdnConfig" => json!({"_": "cdnConfig", "public_keys": []}),
        "help.getPeerColors" | "help.getPeerProfileColors" => {
            json!({"_": "help.peerColorsNotModified"})
        }
        "help.getTimezonesList" => json!({"_": "help.timezonesListNotModified"}),
        "help.dismissSuggestion" | "help.saveAppLog" | "help.acceptTermsOfService" => {
            json!(true)
        }
        "langpack.getLangPack" | "langpack.getDifference" => json!({
            "_": "langPackDifference",
            "lang_code": request["lang_code"].as_str().unwrap_or("en"),
            "from_version": 0, "version": 1, "strings": []}),
        "langpack.getStrings" | "langpack.getLanguages" => json!([]),
        "langpack.getLanguage" => json!({"_": "langPackLanguage", "name": "English",
            "native_name": "English", "lang_code": "en", "plural_code": "en",
            "strings_count": 0, "translated_count": 0, "translations_url": ""}),
        "account.updateStatus"
        | "account.registerDevice"
        | "account.unregisterDevice"
        | "account.updateNotifySettings" => json!(true),
        "account.getNotifySettings" => json!({"_": "peerNotifySettings"}),
        "account.getContentSettings" => json!({"_": "account.contentSettings"}),
        "account.getAuthorizations" => json!({"_": "account.authorizations",
            "authorization_ttl_days": 180, "authorizations": []}),
        "account.getPassword" => json!({"_": "account.password",
            "new_algo": {"_": "passwordKdfAlgoUnknown"},
            "new_secure_algo": {"_": "securePasswordKdfAlgoUnknown"},
            "secure_random": hex_random(32)}),
        "messages.getAvailableReactions" => json!({"_": "messages.availableReactionsNotModified"}),
        "messages.getAllStickers" => json!({"_": "messages.allStickersNotModified"}),
        "contacts.getTopPeers" => json!({"_": "contacts.topPeersDisabled"}),
        _ => return None,
    })
}

fn hex_random(n: usize) -> String {
    hex::encode((0..n).map(|_| rand::random::<u8>()).collect::<Vec<u8>>())
}

/// `config`: every DC points at this server; limits are the application's.
fn config(conn: &Conn, now: i64) -> Value {
    let addr = conn.front.public_addr;
    let dc_options: Vec<Value> = (1..=5)
        .map(|id| {
            json!({"_": "dcOption", "ipv6": addr.is_ipv6(), "id": id,
                "ip_address": addr.ip().to_string(), "port": addr.port()})
        })
        .collect();
    json!({
        "_": "config",
        "date": now,
        "expires": now + 3600,
        "test_mode": false,
        "this_dc": THIS_DC,
        "dc_options": dc_options,
        "dc_txt_domain_name": "",
        "chat_size_max": 200,
        "megagroup_size_max": 200000,
        "forwarded_count_max": domain::limits::MAX_FORWARD_IDS,
        "online_update_period_ms": 210000,
        "offline_blur_timeout_ms": 5000,
        "offline_idle_timeout_ms": 30000,
        "online_cloud_timeout_ms": 300000,
        "notify_cloud_delay_ms": 30000,
        "notify_default_delay_ms": 1500,
        "push_chat_period_ms": 60000,
        "push_chat_limit": 2,
        "edit_time_limit": 172800,
        "revoke_time_limit": i32::MAX,
        "revoke_pm_time_limit": i32::MAX,
        "rating_e_decay": 2419200,
        "stickers_recent_limit": 200,
        "channels_read_media_period": 604800,
        "call_receive_timeout_ms": 20000,
        "call_ring_timeout_ms": 90000,
        "call_connect_timeout_ms": 30000,
        "call_packet_timeout_ms": 10000,
        "me_url_prefix": "https://t.me/",
        "caption_length_max": 1024,
        "message_length_max": domain::limits::MAX_MESSAGE_TEXT_CODE_POINTS,
        "webfile_dc_id": THIS_DC,
    })
}
