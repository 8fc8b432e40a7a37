//! Telegram Desktop 4.6.5's layer, 152, at the protocol level, with the protocol-level client
//! (`raw`): a session that says `invokeWithLayer(152, …)`, encodes every request with layer
//! 152's own constructors and decodes every answer and push with layer 152's schema alone (no
//! fallback to a newer layer), so an answer carrying one constructor id a 152 client does not know
//! fails here as it fails in TDesktop. It makes TDesktop's calls before and after login, signs up
//! with 152's `auth.signUp`, calls every method of the JSON API in its 152 form, and receives a
//! pushed message.

use mtproto::client::RsaEncoding;
use mtproto::crypto::PublicKey;
use mtproto::tl::{decode_object, gunzip, Reader, Schema, GZIP_PACKED};
use mtproto::transport::Kind;
use serde_json::{json, Value};

use super::raw::{Conn, Session};
use super::Setup;

const LAYER: i32 = 152;

/// TDesktop's wrapper around its first call on a connection.
fn init(query: Value) -> Value {
    json!({"_": "invokeWithLayer", "layer": LAYER, "query": {"_": "initConnection",
        "api_id": 611335, "device_model": "PC 64bit", "system_version": "Linux",
        "app_version": "4.6.5", "system_lang_code": "en-US", "lang_pack": "tdesktop",
        "lang_code": "en", "query": query}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn layer_152_calls_and_answers_as_tdesktop_4_6_5_makes_them() {
    let setup = Setup::fresh("mtproto152").await;
    let mut server = setup.spawn();
    let key_info = setup.wait_ready(&mut server).await;
    let key = PublicKey::new(
        &hex::decode(key_info["modulus_hex"].as_str().unwrap()).unwrap(),
        &hex::decode(key_info["exponent_hex"].as_str().unwrap()).unwrap(),
    );
    let exact = Schema::exact(LAYER).expect("layer 152 is supported");

    // TDesktop's transport and key exchange: obfuscated abridged, RSA_PAD.
    let mut conn = Conn::open(setup.mt_port, Kind::Abridged, true).await;
    let (auth_key, salt) = conn.handshake(&key, RsaEncoding::Pad, None).await;
    let mut s = Session::new(conn, auth_key, salt);
    s.schema = exact;

    // Before login.
    let config = s
        .call(init(json!({"_": "help.getConfig"})))
        .await
        .expect("help.getConfig in 152's config#232566ac");
    assert_eq!(config["_"], "config");
    assert_eq!(
        config["test_mode"], false,
        "TDesktop runs in production mode"
    );
    assert_eq!(config["this_dc"], 2);
    assert!(
        config["dc_options"]
            .as_array()
            .unwrap()
            .iter()
            .any(|o| o["id"] == 2 && o["ip_address"] == "127.0.0.1" && o["port"] == setup.mt_port),
        "DC 2 at the reachable address: {config}"
    );
    assert_eq!(config["pinned_dialogs_count_max"], 5, "{config}");
    let before: Vec<(Value, &str)> = vec![
        (json!({"_": "help.getNearestDc"}), "nearestDc"),
        (
            json!({"_": "help.getCountriesList", "lang_code": "en", "hash": 0}),
            "help.countriesListNotModified",
        ),
        (json!({"_": "help.getAppConfig"}), "jsonObject"),
        (
            json!({"_": "langpack.getLangPack", "lang_pack": "tdesktop", "lang_code": "en"}),
            "langPackDifference",
        ),
        (
            json!({"_": "langpack.getDifference", "lang_pack": "tdesktop", "lang_code": "en",
                "from_version": 1}),
            "langPackDifference",
        ),
        (
            json!({"_": "auth.exportLoginToken", "api_id": 611335,
                "api_hash": "9ff1a639196c0779c86dd661af8522ba", "except_ids": []}),
            "auth.loginToken",
        ),
        (
            json!({"_": "help.getTermsOfServiceUpdate"}),
            "help.termsOfServiceUpdateEmpty",
        ),
        (json!({"_": "help.getPromoData"}), "help.promoDataEmpty"),
    ];
    for (request, answer) in &before {
        let got = s.call(request.clone()).await;
        assert_eq!(
            got.as_ref().map(|v| v["_"].clone()),
            Ok(json!(answer)),
            "{request}: {got:?}"
        );
    }
    let lang = s
        .call(
            json!({"_": "langpack.getDifference", "lang_pack": "tdesktop",
            "lang_code": "en", "from_version": 1}),
        )
        .await
        .unwrap();
    assert_eq!(
        (lang["lang_code"].clone(), lang["from_version"].clone()),
        (json!("en"), json!(1))
    );
    let strings = s
        .call(
            json!({"_": "langpack.getStrings", "lang_pack": "tdesktop", "lang_code": "en",
            "keys": ["lng_intro_about"]}),
        )
        .await;
    assert_eq!(strings, Ok(json!([])));

    // Sign-up with 152's forms.
    let phone = "+15551520001";
    let sent = s
        .call(
            json!({"_": "auth.sendCode", "phone_number": phone, "api_id": 611335,
            "api_hash": "9ff1a639196c0779c86dd661af8522ba",
            "settings": {"_": "codeSettings"}}),
        )
        .await
        .expect("auth.sentCode");
    assert_eq!(sent["_"], "auth.sentCode");
    let length = sent["type"]["length"].as_i64().unwrap_or(0);
    assert!(length > 0, "a code type with a length: {sent}");
    let hash = sent["phone_code_hash"].clone();
    let signed = s
        .call(
            json!({"_": "auth.signIn", "phone_number": phone, "phone_code_hash": hash,
            "phone_code": "12345"}),
        )
        .await
        .expect("auth.signIn");
    assert_eq!(signed["_"], "auth.authorizationSignUpRequired");
    let auth = s
        .call(
            json!({"_": "auth.signUp", "phone_number": phone, "phone_code_hash": hash,
            "first_name": "Desk", "last_name": "Top"}),
        )
        .await
        .expect("auth.signUp#80eee427 answered with 152's user#8f97c628");
    assert_eq!(auth["user"]["first_name"], "Desk");
    assert_eq!(auth["user"]["self"], true);
    let my_id = auth["user"]["id"].clone();

    // After login, TDesktop's calls.
    let state = s
        .call(json!({"_": "updates.getState"}))
        .await
        .expect("state");
    assert_eq!(state["_"], "updates.state");
    let full = s
        .call(json!({"_": "users.getFullUser", "id": {"_": "inputUserSelf"}}))
        .await
        .expect("users.getFullUser (self)");
    assert_eq!(full["full_user"]["id"], my_id);
    assert_eq!(full["users"][0]["self"], true);
    let status = s
        .call(json!({"_": "account.updateStatus", "offline": false}))
        .await;
    assert_eq!(status, Ok(json!(true)));
    let filters = s
        .call(json!({"_": "messages.getDialogFilters"}))
        .await
        .expect("messages.getDialogFilters#f19ed96d: a vector in 152");
    assert!(filters.is_array(), "{filters}");
    // What the real Telegram Desktop 4.6.5 called next and was once refused (found by
    // tests/integration/mtproto/tdesktop.rs): served, or refused as Telegram refuses a sticker
    // set or username that does not exist.
    let premium = s.call(json!({"_": "help.getPremiumPromo"})).await;
    assert_eq!(
        premium.map(|p| p["_"].clone()),
        Ok(json!("help.premiumPromo"))
    );
    let scheduled = s
        .call(
            json!({"_": "messages.getScheduledHistory", "peer": {"_": "inputPeerSelf"}, "hash": 0}),
        )
        .await
        .expect("messages.getScheduledHistory");
    assert_eq!(
        (scheduled["_"].clone(), scheduled["messages"].clone()),
        (json!("messages.messages"), json!([])),
        "152's messages.messages#8c718e87: {scheduled}"
    );
    let typing = s
        .call(
            json!({"_": "messages.setTyping", "peer": {"_": "inputPeerSelf"},
            "action": {"_": "sendMessageTypingAction"}}),
        )
        .await;
    assert_eq!(typing, Ok(json!(true)));
    let sticker_set = s
        .call(json!({"_": "messages.getStickerSet",
            "stickerset": {"_": "inputStickerSetAnimatedEmoji"}, "hash": 0}))
        .await;
    assert_eq!(sticker_set, Err("STICKERSET_INVALID".to_string()));
    let username = s
        .call(json!({"_": "contacts.resolveUsername", "username": "premiumbot"}))
        .await;
    assert_eq!(username, Err("USERNAME_NOT_OCCUPIED".to_string()));

    let other_token = every_json_method(&mut s, &setup).await;

    // A message from the other account is pushed in 152's message#38116ee0.
    let http = reqwest::Client::new();
    let rpc = |method: &str, body: Value| {
        http.post(format!("{}/v1/rpc/{method}", setup.http()))
            .bearer_auth(&other_token)
            .json(&body)
            .send()
    };
    let resolved: Value = rpc("contacts.resolvePhone", json!({"phone": phone}))
        .await
        .expect("resolve")
        .json()
        .await
        .expect("resolved");
    let me = &resolved["users"][0];
    let peer = json!({"_": "inputPeerUser", "user_id": me["id"], "access_hash": me["access_hash"]});
    let sent = rpc(
        "messages.sendMessage",
        json!({"peer": peer, "message": "to TDesktop", "random_id": 1520}),
    )
    .await
    .expect("send");
    assert_eq!(sent.status(), 200);
    let update = pushed_message(&mut s, exact, "to TDesktop").await;
    assert_eq!(update["message"]["out"], false, "{update}");

    // And the difference after it, in 152's updates.getDifference#25939651.
    let diff = s
        .call(
            json!({"_": "updates.getDifference", "pts": state["pts"], "date": state["date"],
            "qts": 0}),
        )
        .await
        .expect("updates.getDifference");
    let texts: Vec<&Value> = diff["new_messages"]
        .as_array()
        .expect("updates.difference")
        .iter()
        .map(|m| &m["message"])
        .collect();
    assert!(texts.contains(&&json!("to TDesktop")), "{diff}");

    // A new connection continuing the session (TDesktop's after one dropped) does not say its
    // layer again, and is still answered in 152.
    let mut again = Session::new(
        Conn::open(setup.mt_port, Kind::Abridged, true).await,
        s.key.clone(),
        s.salt,
    );
    again.id = s.id;
    again.schema = exact;
    let diff = again
        .call(
            json!({"_": "updates.getDifference", "pts": state["pts"], "date": state["date"],
            "qts": -1}),
        )
        .await
        .expect("updates.getDifference on the session's next connection, in 152");
    assert_eq!(diff["_"], "updates.difference", "{diff}");
}

/// The pushed `Updates` (of any layer's constructor ids: each must decode with `schema` alone)
/// until one has an `updateNewMessage` with `text`, including those seen while `s` waited for
/// results.
async fn pushed_message(s: &mut Session, schema: &'static Schema, text: &str) -> Value {
    let is_updates = |body: &[u8]| {
        let id = Reader::new(body).u32().unwrap_or(0);
        Schema::api()
            .by_id(id)
            .is_some_and(|c| c.result == "Updates" && !c.is_function)
    };
    let mut pending: Vec<Vec<u8>> = std::mem::take(&mut s.seen);
    loop {
        let body = match pending.pop() {
            Some(b) => b,
            None => s.next().await.expect("a push"),
        };
        let body = if body.len() > 4 && body[..4] == GZIP_PACKED.to_le_bytes() {
            gunzip(Reader::new(&body[4..]).bytes().unwrap()).unwrap()
        } else {
            body
        };
        if !is_updates(&body) {
            continue;
        }
        let pushed = decode_object(schema, &mut Reader::new(&body))
            .unwrap_or_else(|e| panic!("push not decodable in layer {}: {e:?}", schema.layer));
        let new_message = pushed["updates"].as_array().and_then(|u| {
            u.iter()
                .find(|u| u["_"] == "updateNewMessage" && u["message"]["message"] == text)
        });
        if let Some(update) = new_message {
            return update.clone();
        }
    }
}

/// Every method the JSON API serves, in its layer-152 form, answered in layer 152 (decoded with
/// its schema alone). Returns the other account's bearer token.
async fn every_json_method(s: &mut Session, setup: &Setup) -> String {
    let http = reqwest::Client::new();
    let login: Value = http
        .post(format!("{}/v1/auth/login", setup.http()))
        .json(&json!({"phone": "+15551520002", "first_name": "Other"}))
        .send()
        .await
        .expect("login")
        .json()
        .await
        .expect("login body");
    let resolved = s
        .call(json!({"_": "contacts.resolvePhone", "phone": "+15551520002"}))
        .await
        .expect("resolvePhone");
    let other_user = &resolved["users"][0];
    let other = json!({"_": "inputPeerUser", "user_id": other_user["id"], "access_hash": other_user["access_hash"]});
    let other_input_user = json!({"_": "inputUser", "user_id": other_user["id"], "access_hash": other_user["access_hash"]});
    let me = json!({"_": "inputPeerSelf"});
    let dialog_me = json!({"_": "inputDialogPeer", "peer": me});

    // 152's reply: `reply_to_msg_id`, not an InputReplyTo; the message keeps the reply header.
    let sent_id = |answer: &Value| {
        answer["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("updateShortSentMessage: {answer}"))
    };
    let first = s
        .call(json!({"_": "messages.sendMessage", "peer": me, "message": "note", "random_id": 11}))
        .await
        .expect("sendMessage#1cc20387");
    let first_id = sent_id(&first);
    let reply = s
        .call(
            json!({"_": "messages.sendMessage", "peer": me, "message": "re: note",
            "random_id": 10, "reply_to_msg_id": first_id}),
        )
        .await
        .expect("a reply in 152's form");
    let got = s
        .call(json!({"_": "messages.getMessages",
            "id": [{"_": "inputMessageID", "id": sent_id(&reply)}]}))
        .await
        .expect("getMessages");
    assert_eq!(
        got["messages"][0]["reply_to"]["reply_to_msg_id"], first_id,
        "{got}"
    );

    let calls: Vec<Value> = vec![
        json!({"_": "messages.sendMessage", "peer": other, "message": "hi other", "random_id": 12}),
        json!({"_": "messages.forwardMessages", "from_peer": me, "id": [first_id], "random_id": [13], "to_peer": me}),
        json!({"_": "messages.editMessage", "peer": me, "id": first_id, "message": "edited note"}),
        json!({"_": "messages.readHistory", "peer": me, "max_id": 10}),
        json!({"_": "messages.readMessageContents", "id": [first_id]}),
        json!({"_": "messages.getDialogs", "offset_peer": {"_": "inputPeerEmpty"}, "limit": 10}),
        json!({"_": "messages.getPeerDialogs", "peers": [dialog_me]}),
        json!({"_": "messages.getHistory", "peer": me, "limit": 10}),
        json!({"_": "messages.getMessages", "id": [{"_": "inputMessageID", "id": first_id}]}),
        json!({"_": "messages.search", "peer": me, "q": "edited", "filter": {"_": "inputMessagesFilterEmpty"}, "limit": 10}),
        json!({"_": "updates.getState"}),
        json!({"_": "updates.getDifference", "pts": 1, "date": 0, "qts": 0}),
        json!({"_": "users.getUsers", "id": [{"_": "inputUserSelf"}, other_input_user]}),
        json!({"_": "users.getFullUser", "id": other_input_user}),
        json!({"_": "contacts.block", "id": other}),
        json!({"_": "contacts.getBlocked", "limit": 10}),
        json!({"_": "contacts.unblock", "id": other}),
        json!({"_": "messages.toggleDialogPin", "pinned": true, "peer": dialog_me}),
        json!({"_": "messages.reorderPinnedDialogs", "force": true, "folder_id": 0, "order": [dialog_me]}),
        json!({"_": "messages.getPinnedDialogs", "folder_id": 0}),
        json!({"_": "messages.markDialogUnread", "unread": true, "peer": dialog_me}),
        json!({"_": "messages.getDialogUnreadMarks"}),
        json!({"_": "folders.editPeerFolders", "folder_peers": [{"_": "inputFolderPeer", "peer": other, "folder_id": 1}]}),
        // 152's folder title is a plain string.
        json!({"_": "messages.updateDialogFilter", "id": 2, "filter": {"_": "dialogFilter", "id": 2,
            "title": "Work", "pinned_peers": [], "include_peers": [other], "exclude_peers": []}}),
        json!({"_": "messages.updateDialogFiltersOrder", "order": [2]}),
        json!({"_": "messages.getDialogFilters"}),
        json!({"_": "contacts.importContacts", "contacts": [{"_": "inputPhoneContact", "client_id": 1,
            "phone": "+15551520002", "first_name": "Oth", "last_name": ""}]}),
        json!({"_": "contacts.addContact", "id": other_input_user, "first_name": "Other", "last_name": "X", "phone": ""}),
        json!({"_": "contacts.getContacts", "hash": 0}),
        json!({"_": "messages.getPeerSettings", "peer": other}),
        json!({"_": "messages.hidePeerSettingsBar", "peer": other}),
        json!({"_": "contacts.deleteContacts", "id": [other_input_user]}),
        json!({"_": "contacts.resetSaved"}),
        json!({"_": "account.updateNotifySettings", "peer": {"_": "inputNotifyPeer", "peer": other},
            "settings": {"_": "inputPeerNotifySettings", "show_previews": false, "silent": true, "mute_until": 2147483647}}),
        json!({"_": "account.getNotifySettings", "peer": {"_": "inputNotifyPeer", "peer": other}}),
        json!({"_": "account.getNotifySettings", "peer": {"_": "inputNotifyUsers"}}),
        json!({"_": "account.getPassword"}),
        // No password yet and none set: the empty check with empty settings changes nothing.
        json!({"_": "account.updatePasswordSettings", "password": {"_": "inputCheckPasswordEmpty"},
            "new_settings": {"_": "account.passwordInputSettings"}}),
        json!({"_": "account.getAuthorizations"}),
        // No device has this hash: refused on its merits (tests/integration/mtproto/sessions.rs
        // ends real devices).
        json!({"_": "account.resetAuthorization", "hash": 1}),
        // Media that does not exist: refused on its merits (decoded from TL first).
        json!({"_": "messages.sendMedia", "peer": me, "message": "", "random_id": 14,
            "media": {"_": "inputMediaDocument", "id": {"_": "inputDocument", "id": 1, "access_hash": 1, "file_reference": ""}}}),
        json!({"_": "messages.sendMultiMedia", "peer": me, "multi_media": [{"_": "inputSingleMedia",
            "media": {"_": "inputMediaPhoto", "id": {"_": "inputPhoto", "id": 1, "access_hash": 1, "file_reference": ""}},
            "random_id": 15, "message": ""}]}),
        json!({"_": "messages.uploadMedia", "peer": me,
            "media": {"_": "inputMediaPhoto", "id": {"_": "inputPhoto", "id": 1, "access_hash": 1, "file_reference": "00"}}}),
        json!({"_": "upload.getFile", "location": {"_": "inputDocumentFileLocation", "id": 1,
            "access_hash": 1, "file_reference": "", "thumb_size": ""}, "offset": 0, "limit": 4096}),
        // One part of each kind (the bytes hex, as the TL encoder takes them).
        json!({"_": "upload.saveFilePart", "file_id": 41, "file_part": 0, "bytes": "ab".repeat(1024)}),
        json!({"_": "upload.saveBigFilePart", "file_id": 42, "file_part": 0, "file_total_parts": 1, "bytes": "cd".repeat(1024)}),
        // Profile photos: file 41 is no image, photo 1 is no photo of this account (refused on
        // their merits); the list and a delete of nothing answer.
        json!({"_": "photos.uploadProfilePhoto", "file": {"_": "inputFile", "id": 41, "parts": 1,
            "name": "p.jpg", "md5_checksum": ""}}),
        json!({"_": "photos.updateProfilePhoto", "id": {"_": "inputPhoto", "id": 1, "access_hash": 1, "file_reference": ""}}),
        json!({"_": "photos.getUserPhotos", "user_id": {"_": "inputUserSelf"}, "offset": 0, "max_id": 0, "limit": 10}),
        json!({"_": "photos.deletePhotos", "id": [{"_": "inputPhoto", "id": 1, "access_hash": 1, "file_reference": ""}]}),
        json!({"_": "messages.deleteMessages", "revoke": true, "id": [first_id]}),
        json!({"_": "messages.deleteHistory", "peer": me, "max_id": 0}),
    ];
    let mut called = std::collections::BTreeSet::from([
        "contacts.resolvePhone".to_string(),
        "messages.sendMessage".to_string(),
    ]);
    let mut failures = Vec::new();
    let mut answers = std::collections::BTreeMap::new();
    for request in &calls {
        let name = request["_"].as_str().unwrap().to_string();
        called.insert(name.clone());
        match s.call(request.clone()).await {
            Ok(answer) => {
                answers.insert(name, answer);
            }
            Err(e) if name == "account.resetAuthorization" && e == "HASH_INVALID" => {}
            Err(e) if super::media_refused(&name, &e) => {}
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "methods failing in layer 152: {failures:#?}"
    );
    // The folder made with a string title reads back with it, in 152's vector.
    let filters = &answers["messages.getDialogFilters"];
    assert!(
        filters
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["id"] == 2 && f["title"] == "Work")),
        "{filters}"
    );
    // What the JSON API serves is called here, or is no function of layer 152 (so a 152
    // client cannot make it).
    let exact = Schema::exact(152).unwrap();
    let missing: Vec<&&str> = ptslog_server::http::METHODS
        .iter()
        .filter(|m| !called.contains(**m) && exact.by_name(m).is_some())
        .collect();
    assert!(
        missing.is_empty(),
        "JSON API methods not called in 152: {missing:?}"
    );
    let absent: Vec<&&str> = ptslog_server::http::METHODS
        .iter()
        .filter(|m| exact.by_name(m).is_none())
        .collect();
    assert_eq!(
        absent,
        [
            &"messages.getOutboxReadDate",
            &"messages.toggleDialogFilterTags"
        ]
    );
    login["token"].as_str().expect("token").to_string()
}
