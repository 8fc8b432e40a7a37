//! Answers to the calls clients make while starting up (configuration, language packs, terms of
//! service, …): valid defaults, so no client stops on an error it does not expect. These need no
//! account.

use serde_json::{json, Value};

use super::connection::{now_ms, Conn};

/// The DC id this server calls itself; every DC id in the config points back here, and every photo
/// and document names it (`domain::media::THIS_DC`).
pub const THIS_DC: i32 = domain::media::THIS_DC;

pub(super) fn answer(conn: &Conn, name: &str, request: &Value) -> Option<Value> {
    let now = now_ms() / 1000;
    match name {
        "help.getConfig" => Some(config(conn, now)),
        _ => default_answer(name, request, now),
    }
}

/// The calls answered the same for everyone: empty lists, "not modified", defaults.
fn default_answer(name: &str, request: &Value, now: i64) -> Option<Value> {
    let empty_updates =
        || json!({"_": "updates", "updates": [], "users": [], "chats": [], "date": now, "seq": 0});
    Some(match name {
        "help.getNearestDc" => json!({"_": "nearestDc", "country": "US",
            "this_dc": THIS_DC, "nearest_dc": THIS_DC}),
        "help.getAppConfig" => json!({"_": "help.appConfig", "hash": 0,
            "config": {"_": "jsonObject", "value": []}}),
        // "Not modified": clients keep their built-in list (TDesktop replaces its list with
        // whatever `help.countriesList` carries, so an empty one would leave it none).
        "help.getCountriesList" => json!({"_": "help.countriesListNotModified"}),
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
        "help.getPassportConfig" => json!({"_": "help.passportConfigNotModified"}),
        "help.dismissSuggestion" | "help.saveAppLog" | "help.acceptTermsOfService" => {
            json!(true)
        }
        // No strings: clients keep their built-in ones. The difference is from the version the
        // client has to that same version.
        "langpack.getLangPack" | "langpack.getDifference" => {
            let from = request["from_version"]
                .as_i64()
                .unwrap_or(0)
                .clamp(0, i32::MAX.into());
            json!({"_": "langPackDifference",
                "lang_code": request["lang_code"].as_str().unwrap_or("en"),
                "from_version": from, "version": from.max(1), "strings": []})
        }
        "langpack.getStrings" | "langpack.getLanguages" => json!([]),
        "langpack.getLanguage" => json!({"_": "langPackLanguage", "name": "English",
            "native_name": "English", "lang_code": "en", "plural_code": "en",
            "strings_count": 0, "translated_count": 0, "translations_url": ""}),
        // account.updateNotifySettings / getNotifySettings are served by the JSON API (durable).
        "account.updateStatus" | "account.registerDevice" | "account.unregisterDevice" => {
            json!(true)
        }
        "account.getNotifyExceptions" => empty_updates(),
        "account.getContentSettings" => json!({"_": "account.contentSettings"}),
        "account.getPrivacy" => {
            json!({"_": "account.privacyRules", "rules": [], "chats": [], "users": []})
        }
        "account.getGlobalPrivacySettings" => json!({"_": "globalPrivacySettings"}),
        "account.getAccountTTL" => json!({"_": "accountDaysTTL", "days": 365}),
        "account.getThemes" => json!({"_": "account.themesNotModified"}),
        "account.getWallPapers" => json!({"_": "account.wallPapersNotModified"}),
        "account.getDefaultEmojiStatuses" | "account.getRecentEmojiStatuses" => {
            json!({"_": "account.emojiStatusesNotModified"})
        }
        "messages.getAvailableReactions" => json!({"_": "messages.availableReactionsNotModified"}),
        "messages.getRecentReactions" | "messages.getTopReactions" => {
            json!({"_": "messages.reactionsNotModified"})
        }
        "messages.getAllStickers" => json!({"_": "messages.allStickersNotModified"}),
        "messages.getFeaturedStickers" => {
            json!({"_": "messages.featuredStickersNotModified", "count": 0})
        }
        "messages.getSavedGifs" => json!({"_": "messages.savedGifsNotModified"}),
        "messages.getRecentStickers" => json!({"_": "messages.recentStickersNotModified"}),
        "messages.getFavedStickers" => json!({"_": "messages.favedStickersNotModified"}),
        "messages.getStickers" => json!({"_": "messages.stickersNotModified"}),
        "messages.getAttachMenuBots" => json!({"_": "attachMenuBotsNotModified"}),
        "messages.getQuickReplies" => json!({"_": "messages.quickRepliesNotModified"}),
        "messages.getAvailableEffects" => json!({"_": "messages.availableEffectsNotModified"}),
        "messages.getDefaultHistoryTTL" => json!({"_": "defaultHistoryTTL", "period": 0}),
        "messages.getSavedDialogs" => json!({"_": "messages.savedDialogs", "dialogs": [],
            "messages": [], "chats": [], "users": []}),
        "messages.getSearchCounters" | "messages.getEmojiKeywordsLanguages" => json!([]),
        "stories.getAllStories" => json!({"_": "stories.allStoriesNotModified", "state": "",
            "stealth_mode": {"_": "storiesStealthMode"}}),
        "contacts.getTopPeers" => json!({"_": "contacts.topPeersDisabled"}),
        "contacts.getBirthdays" => {
            json!({"_": "contacts.contactBirthdays", "contacts": [], "users": []})
        }
        // QR login is not offered: a token that is never accepted (clients show the phone form).
        "auth.exportLoginToken" => json!({"_": "auth.loginToken", "expires": now + 30,
            "token": hex_random(32)}),
        "messages.getSavedReactionTags" => json!({"_": "messages.savedReactionTagsNotModified"}),
        "messages.getDefaultTagReactions" => json!({"_": "messages.reactionsNotModified"}),
        "messages.getEmojiStickers" => json!({"_": "messages.allStickersNotModified"}),
        "messages.getSuggestedDialogFilters" => json!([]),
        "messages.getEmojiGroups"
        | "messages.getEmojiStatusGroups"
        | "messages.getEmojiProfilePhotoGroups" => json!({"_": "messages.emojiGroupsNotModified"}),
        "account.getContactSignUpNotification" => json!(false),
        "account.getChatThemes" => json!({"_": "account.themesNotModified"}),
        "account.getCollectibleEmojiStatuses" => json!({"_": "account.emojiStatusesNotModified"}),
        "account.getDefaultProfilePhotoEmojis" | "account.getDefaultBackgroundEmojis" => {
            json!({"_": "emojiListNotModified"})
        }
        "contacts.getStatuses" | "contacts.getSaved" => json!([]),
        // Telegram Desktop 4.6.5 asks for these right after login and when a chat opens.
        "help.getPremiumPromo" => json!({"_": "help.premiumPromo", "status_text": "",
            "status_entities": [], "video_sections": [], "videos": [], "period_options": [],
            "users": []}),
        // Nothing is ever scheduled here.
        "messages.getScheduledHistory" => {
            json!({"_": "messages.messages", "messages": [], "chats": [], "users": []})
        }
        // Typing notices are not relayed to the peer (they are not in the log either).
        "messages.setTyping" => json!(true),
        _ => return None,
    })
}

/// Every call [`default_answer`] serves, for the test that encodes each answer as TL.
#[cfg(test)]
const DEFAULT_ANSWERED: &[&str] = &[
    "help.getNearestDc",
    "help.getAppConfig",
    "help.getCountriesList",
    "help.getTermsOfServiceUpdate",
    "help.getPromoData",
    "help.getInviteText",
    "help.getCdnConfig",
    "help.getPeerColors",
    "help.getPeerProfileColors",
    "help.getTimezonesList",
    "help.getPassportConfig",
    "help.dismissSuggestion",
    "help.saveAppLog",
    "help.acceptTermsOfService",
    "langpack.getLangPack",
    "langpack.getDifference",
    "langpack.getStrings",
    "langpack.getLanguages",
    "langpack.getLanguage",
    "account.updateStatus",
    "account.registerDevice",
    "account.unregisterDevice",
    "account.getNotifyExceptions",
    "account.getContentSettings",
    "account.getPrivacy",
    "account.getGlobalPrivacySettings",
    "account.getAccountTTL",
    "account.getThemes",
    "account.getWallPapers",
    "account.getDefaultEmojiStatuses",
    "account.getRecentEmojiStatuses",
    "messages.getAvailableReactions",
    "messages.getRecentReactions",
    "messages.getTopReactions",
    "messages.getAllStickers",
    "messages.getFeaturedStickers",
    "messages.getSavedGifs",
    "messages.getRecentStickers",
    "messages.getFavedStickers",
    "messages.getStickers",
    "messages.getAttachMenuBots",
    "messages.getQuickReplies",
    "messages.getAvailableEffects",
    "messages.getDefaultHistoryTTL",
    "messages.getSavedDialogs",
    "messages.getSearchCounters",
    "messages.getEmojiKeywordsLanguages",
    "stories.getAllStories",
    "contacts.getTopPeers",
    "contacts.getStatuses",
    "contacts.getSaved",
    "contacts.getBirthdays",
    "auth.exportLoginToken",
    "messages.getSavedReactionTags",
    "messages.getDefaultTagReactions",
    "messages.getEmojiStickers",
    "messages.getSuggestedDialogFilters",
    "messages.getEmojiGroups",
    "messages.getEmojiStatusGroups",
    "messages.getEmojiProfilePhotoGroups",
    "account.getContactSignUpNotification",
    "account.getChatThemes",
    "account.getCollectibleEmojiStatuses",
    "account.getDefaultProfilePhotoEmojis",
    "account.getDefaultBackgroundEmojis",
    "help.getPremiumPromo",
    "messages.getScheduledHistory",
    "messages.setTyping",
];

/// Calls about things this server has none of (sticker sets, usernames), refused as Telegram
/// refuses one that does not exist, which clients expect and handle.
pub(super) fn refusal(name: &str) -> Option<(i32, &'static str)> {
    match name {
        "messages.getStickerSet" => Some((400, "STICKERSET_INVALID")),
        "contacts.resolveUsername" => Some((400, "USERNAME_NOT_OCCUPIED")),
        _ => None,
    }
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
        "saved_gifs_limit": 200,
        "stickers_faved_limit": 5,
        // Layer 152 still has these in the config (newer layers moved them to the app config).
        "pinned_dialogs_count_max": domain::limits::MAX_PINNED_DIALOGS_MAIN,
        "pinned_infolder_count_max": domain::limits::MAX_PINNED_DIALOGS_ARCHIVE,
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

#[cfg(test)]
mod tests {
    use mtproto::tl::{decode_object, encode_result, Reader, Schema, Writer, LAYERS};
    use serde_json::json;

    use super::*;

    /// Each answer encodes for every supported layer that has the call, and decodes with that
    /// layer's own constructors only (what a client of exactly that layer can read).
    #[test]
    fn every_default_answer_is_valid_tl_for_its_call_in_every_layer() {
        assert!(Schema::api().by_name("help.getConfig").is_some());
        for (layer, _) in LAYERS {
            let exact = Schema::exact(*layer).unwrap();
            for name in DEFAULT_ANSWERED {
                if !exact.by_name(name).is_some_and(|c| c.is_function) {
                    // A call this layer does not have: its clients never make it.
                    assert!(*layer < 230, "{name} is not a function of the newest layer");
                    continue;
                }
                let answer = default_answer(name, &json!({}), 1_764_489_600)
                    .unwrap_or_else(|| panic!("{name} has no answer"));
                let mut w = Writer::new();
                encode_result(Schema::for_layer(Some(*layer)), name, &answer, &mut w)
                    .unwrap_or_else(|e| panic!("{layer} {name}: {e}"));
                let back = decode_object(exact, &mut Reader::new(&w.buf))
                    .unwrap_or_else(|e| panic!("{layer} {name}: {e:?}"));
                assert!(!back.is_null(), "{layer} {name}");
            }
        }
    }

    /// TDesktop 4.6.5 asks for the app config in layer 152's form (no hash) and reads a bare
    /// JSONValue, and an empty language pack difference for its own language and version.
    #[test]
    fn layer_152_gets_its_app_config_and_language_pack_shapes() {
        let exact = Schema::exact(152).unwrap();
        let encode = |name: &str, request: Value| {
            let answer = default_answer(name, &request, 1_764_489_600).unwrap();
            let mut w = Writer::new();
            encode_result(Schema::for_layer(Some(152)), name, &answer, &mut w).unwrap();
            decode_object(exact, &mut Reader::new(&w.buf)).unwrap()
        };
        assert_eq!(encode("help.getAppConfig", json!({}))["_"], "jsonObject");
        let diff = encode(
            "langpack.getDifference",
            json!({"lang_pack": "tdesktop", "lang_code": "de", "from_version": 7}),
        );
        assert_eq!(
            diff,
            json!({"_": "langPackDifference", "lang_code": "de", "from_version": 7,
                "version": 7, "strings": []})
        );
        let pack = encode(
            "langpack.getLangPack",
            json!({"lang_pack": "tdesktop", "lang_code": "en"}),
        );
        assert_eq!(
            (pack["lang_code"].clone(), pack["version"].clone()),
            (json!("en"), json!(1))
        );
    }
}
