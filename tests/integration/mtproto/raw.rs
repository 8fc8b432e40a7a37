//! The MTProto front at the protocol level, with a client written from the protocol description
//! (`ptslog_mtproto::client`): what the real-client tests cannot reach. The RSA_PAD handshake
//! (TDesktop's) over obfuscated padded intermediate, a permanent and a temporary key bound with
//! `auth.bindTempAuthKey`, sign-up over the temporary key (which signs in the permanent one), and
//! hostile input: an unknown key, a replayed msg_id, a wrong salt, a stale msg_id, an oversized
//! frame and a garbage obfuscation header, each answered or closed on that connection only.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mtproto::client::{encrypt_v1, ClientHandshake, ClientStep, RsaEncoding};
use mtproto::crypto::{AuthKey, PublicKey, Side};
use mtproto::handshake::{decode_plain, encode_plain};
use mtproto::service::{BAD_MSG_NOTIFICATION, BAD_SERVER_SALT, PING, PONG, RPC_ERROR, RPC_RESULT};
use mtproto::session::{decrypt_from, encrypt, Plain};
use mtproto::tl::{decode_object, encode_object, gunzip, Reader, Schema, Writer, GZIP_PACKED};
use mtproto::transport::{ClientObfuscation, Framing, Kind, Obfuscation};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::Setup;

mod bombs;
#[path = "push_once.rs"]
mod push_once;
#[path = "sessions.rs"]
mod sessions;
mod sign_in_codes;

pub(super) const WAIT: Duration = Duration::from_secs(30);

pub(super) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// A framed (and maybe obfuscated) connection, as a client.
pub(super) struct Conn {
    stream: TcpStream,
    framing: Framing,
    obf: Option<ClientObfuscation>,
    buf: Vec<u8>,
}

/// The last msg_id any connection of this test process used. One sequence for all: connections
/// that share a session (`push_once`'s two of one key) would otherwise send the same msg_id in the
/// same millisecond, which the server rightly drops as a replay; a real client keeps one counter.
static LAST_MSG_ID: AtomicI64 = AtomicI64::new(0);

impl Conn {
    pub(super) async fn open(port: u16, kind: Kind, obfuscated: bool) -> Conn {
        let stream = TcpStream::connect(("127.0.0.1", port))
            .await
            .expect("connect");
        Self::over(stream, kind, obfuscated).await
    }

    /// Over a connected socket (e.g. one bound to another loopback address).
    pub(super) async fn over(mut stream: TcpStream, kind: Kind, obfuscated: bool) -> Conn {
        let mut obf = None;
        if obfuscated {
            let (header, client) = Obfuscation::client_header(kind);
            stream.write_all(&header).await.expect("write header");
            obf = Some(client);
        } else {
            let tag: &[u8] = match kind {
                Kind::Abridged => &[0xef],
                Kind::Intermediate => &[0xee; 4],
                Kind::PaddedIntermediate => &[0xdd; 4],
                Kind::Full => &[],
            };
            stream.write_all(tag).await.expect("write tag");
        }
        Conn {
            stream,
            framing: Framing::new(kind),
            obf,
            buf: Vec::new(),
        }
    }

    pub(super) async fn send_raw(&mut self, mut bytes: Vec<u8>) {
        if let Some(o) = &mut self.obf {
            o.encrypt(&mut bytes);
        }
        let _ = self.stream.write_all(&bytes).await;
    }

    pub(super) async fn send(&mut self, payload: &[u8]) {
        let mut out = Vec::new();
        self.framing.encode_as_client(payload, &mut out);
        self.send_raw(out).await;
    }

    /// The next packet, or `None` when the server closed the connection.
    pub(super) async fn recv(&mut self) -> Option<Vec<u8>> {
        loop {
            if let Some(p) = self.framing.decode(&mut self.buf).expect("server frames") {
                return Some(p);
            }
            let mut chunk = vec![0u8; 65536];
            let n = tokio::time::timeout(WAIT, self.stream.read(&mut chunk))
                .await
                .expect("server answers or closes in time")
                .unwrap_or(0);
            if n == 0 {
                return None;
            }
            chunk.truncate(n);
            if let Some(o) = &mut self.obf {
                o.decrypt(&mut chunk);
            }
            self.buf.extend_from_slice(&chunk);
        }
    }

    pub(super) fn msg_id(&mut self) -> i64 {
        let ms = now_ms();
        let id = ((ms / 1000) << 32) | ((((ms % 1000) << 32) / 1000) & !3);
        let next = |last: i64| id.max(last + 4);
        let last = LAST_MSG_ID
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |last| {
                Some(next(last))
            })
            .unwrap_or_else(|last| last);
        next(last)
    }

    pub(super) async fn handshake(
        &mut self,
        key: &PublicKey,
        encoding: RsaEncoding,
        temp: Option<i32>,
    ) -> (AuthKey, i64) {
        let (mut hs, mut body) = ClientHandshake::start(key.clone(), encoding, temp);
        loop {
            let id = self.msg_id();
            self.send(&encode_plain(id, &body)).await;
            let packet = self.recv().await.expect("handshake answer");
            let (_, reply) = decode_plain(&packet).expect("plain answer");
            match hs.handle(reply).expect("valid server step") {
                ClientStep::Send(next) => body = next,
                ClientStep::Done { auth_key, salt } => return (auth_key, salt),
            }
        }
    }
}

/// An encrypted session over a connection.
pub(super) struct Session {
    pub(super) conn: Conn,
    pub(super) key: AuthKey,
    pub(super) salt: i64,
    pub(super) id: i64,
    content: i32,
    /// Service messages (and pushes) seen while waiting for results.
    pub(super) seen: Vec<Vec<u8>>,
    /// What requests are encoded and answers decoded with (the newest layer unless a test
    /// speaks another: `Schema::exact` then checks every answer uses only that layer's ids).
    pub(super) schema: &'static Schema,
}

impl Session {
    pub(super) fn new(conn: Conn, key: AuthKey, salt: i64) -> Session {
        Session {
            conn,
            key,
            salt,
            id: rand::random(),
            content: 0,
            seen: Vec::new(),
            schema: Schema::api(),
        }
    }

    pub(super) fn packet(&mut self, msg_id: i64, salt: i64, body: &[u8]) -> Vec<u8> {
        self.content += 1;
        encrypt(
            &self.key,
            Side::Client,
            &Plain {
                salt,
                session_id: self.id,
                msg_id,
                seq_no: self.content * 2 - 1,
                body: body.to_vec(),
            },
        )
    }

    /// The next server message's body, or `None` once the connection closed.
    pub(super) async fn next(&mut self) -> Option<Vec<u8>> {
        let packet = self.conn.recv().await?;
        assert!(packet.len() > 4, "transport error {packet:?}");
        let m = decrypt_from(&self.key, Side::Server, &packet).expect("server message decrypts");
        assert_eq!(m.session_id, self.id);
        Some(m.body)
    }

    /// Sends a call with this msg_id and answers its result: Ok(object) or Err(error message).
    pub(super) async fn call_with_id(
        &mut self,
        msg_id: i64,
        request: &Value,
    ) -> Result<Value, String> {
        self.call_with_id_and_code(msg_id, request)
            .await
            .map_err(|(_, message)| message)
    }

    /// As [`Session::call_with_id`], the error with its code: Err((error_code, error_message)).
    async fn call_with_id_and_code(
        &mut self,
        msg_id: i64,
        request: &Value,
    ) -> Result<Value, (i32, String)> {
        let mut w = Writer::new();
        encode_object(self.schema, request, &mut w).expect("request encodes");
        let packet = self.packet(msg_id, self.salt, &w.buf);
        self.conn.send(&packet).await;
        loop {
            let body = self.next().await.expect("an answer before close");
            let mut r = Reader::new(&body);
            if r.u32().unwrap() != RPC_RESULT || r.i64().unwrap() != msg_id {
                self.seen.push(body);
                continue;
            }
            let mut rest = r.remaining().to_vec();
            if rest[..4] == GZIP_PACKED.to_le_bytes() {
                let mut g = Reader::new(&rest[4..]);
                rest = gunzip(g.bytes().unwrap()).unwrap();
            }
            if rest[..4] == RPC_ERROR.to_le_bytes() {
                let mut e = Reader::new(&rest[4..]);
                let code = e.i32().unwrap();
                return Err((code, e.string().unwrap()));
            }
            return decode_object(self.schema, &mut Reader::new(&rest)).map_err(|e| {
                (
                    0,
                    format!("answer not decodable in layer {}: {e:?}", self.schema.layer),
                )
            });
        }
    }

    pub(super) async fn call(&mut self, request: Value) -> Result<Value, String> {
        let id = self.conn.msg_id();
        self.call_with_id(id, &request).await
    }

    /// As [`Session::call`], an error with its code: Err((error_code, error_message)).
    pub(super) async fn call_coded(&mut self, request: Value) -> Result<Value, (i32, String)> {
        let id = self.conn.msg_id();
        self.call_with_id_and_code(id, &request).await
    }
}

pub(super) fn init(query: Value) -> Value {
    json!({"_": "invokeWithLayer", "layer": 230, "query": {"_": "initConnection", "api_id": 1,
        "device_model": "raw", "system_version": "1", "app_version": "1",
        "system_lang_code": "en", "lang_pack": "", "lang_code": "en", "query": query}})
}

pub(super) async fn protocol_checks(setup: &Setup, key_info: &Value) {
    let key = PublicKey::new(
        &hex::decode(key_info["modulus_hex"].as_str().unwrap()).unwrap(),
        &hex::decode(key_info["exponent_hex"].as_str().unwrap()).unwrap(),
    );
    assert_eq!(key.fingerprint(), key_info["fingerprint"].as_i64().unwrap());
    let port = setup.mt_port;

    // TDesktop's way: RSA_PAD, obfuscated padded intermediate, a permanent and a temporary key.
    let mut conn = Conn::open(port, Kind::PaddedIntermediate, true).await;
    let (perm, perm_salt) = conn.handshake(&key, RsaEncoding::Pad, None).await;
    let (temp, temp_salt) = conn.handshake(&key, RsaEncoding::Pad, Some(86400)).await;
    let mut s = Session::new(conn, temp.clone(), temp_salt);
    let config = s
        .call(init(json!({"_": "help.getConfig"})))
        .await
        .expect("config");
    assert_eq!(config["_"], "config");
    assert_eq!(config["dc_options"][0]["port"], port);
    assert_eq!(
        s.call(json!({"_": "updates.getState"})).await,
        Err("AUTH_KEY_UNREGISTERED".to_string())
    );

    // Bind the temporary key to the permanent one.
    let expires_at = (now_ms() / 1000) as i32 + 86400;
    let nonce: i64 = rand::random();
    let msg_id = s.conn.msg_id();
    let mut inner = Writer::new();
    inner
        .u32(0x75a3f765)
        .i64(nonce)
        .i64(temp.id())
        .i64(perm.id())
        .i64(s.id)
        .i32(expires_at);
    let binding = encrypt_v1(
        &perm,
        &Plain {
            salt: rand::random(),
            session_id: rand::random(),
            msg_id,
            seq_no: 0,
            body: inner.buf,
        },
    );
    let bind = |expires_at: i32| {
        json!({"_": "auth.bindTempAuthKey", "perm_auth_key_id": perm.id(), "nonce": nonce,
            "expires_at": expires_at, "encrypted_message": hex::encode(&binding)})
    };
    // A binding whose fields disagree with the encrypted message is refused.
    assert_eq!(
        s.call(bind(expires_at + 1)).await,
        Err("ENCRYPTED_MESSAGE_INVALID".to_string())
    );
    assert_eq!(
        s.call_with_id(msg_id, &bind(expires_at)).await,
        Ok(json!(true))
    );

    // Sign up over the temporary key.
    let phone = "+15559990001";
    let sent = s
        .call(
            json!({"_": "auth.sendCode", "phone_number": phone, "api_id": 1, "api_hash": "x",
            "settings": {"_": "codeSettings"}}),
        )
        .await
        .expect("sentCode");
    let hash = sent["phone_code_hash"].clone();
    let sign_in = |code: &str| json!({"_": "auth.signIn", "phone_number": phone, "phone_code_hash": hash, "phone_code": code});
    assert_eq!(
        s.call(sign_in("54321")).await,
        Err("PHONE_CODE_INVALID".to_string())
    );
    let r = s.call(sign_in("12345")).await.expect("signIn");
    assert_eq!(r["_"], "auth.authorizationSignUpRequired");
    let r = s
        .call(
            json!({"_": "auth.signUp", "phone_number": phone, "phone_code_hash": hash,
            "first_name": "Raw", "last_name": ""}),
        )
        .await
        .expect("signUp");
    assert_eq!(r["user"]["first_name"], "Raw");
    assert_eq!(r["user"]["self"], true);

    // The permanent key, on a new plain-abridged connection, is signed in as that account.
    let mut p = Session::new(
        Conn::open(port, Kind::Abridged, false).await,
        perm.clone(),
        perm_salt,
    );
    let users = p
        .call(init(
            json!({"_": "users.getUsers", "id": [{"_": "inputUserSelf"}]}),
        ))
        .await
        .expect("getUsers");
    assert_eq!(users[0]["first_name"], "Raw");

    let other_token = every_json_method(&mut p, setup).await;
    pushes_skip_connections_without_updates(&mut p, &perm, perm_salt, setup, &other_token).await;

    // A replayed msg_id is dropped: two sends of the same ping, one pong.
    let ping = |id: i64| {
        let mut w = Writer::new();
        w.u32(PING).i64(id);
        w.buf
    };
    let replayed_id = p.conn.msg_id();
    let salt = p.salt;
    let packet = p.packet(replayed_id, salt, &ping(1));
    p.conn.send(&packet).await;
    p.conn.send(&packet).await;
    let id2 = p.conn.msg_id();
    let packet2 = p.packet(id2, salt, &ping(2));
    p.conn.send(&packet2).await;
    let mut pongs = Vec::new();
    while !pongs.contains(&2) {
        let body = p.next().await.expect("pongs");
        let mut r = Reader::new(&body);
        if r.u32().unwrap() == PONG {
            r.i64().unwrap();
            pongs.push(r.i64().unwrap());
        }
    }
    assert_eq!(pongs, vec![1, 2], "the replay got no second pong");

    // A wrong salt: bad_server_salt with the current one (salts rotate: not necessarily the
    // handshake's), which is then accepted.
    let id = p.conn.msg_id();
    let packet = p.packet(id, salt ^ 1, &ping(3));
    p.conn.send(&packet).await;
    let body = p.next().await.expect("bad_server_salt");
    let mut r = Reader::new(&body);
    assert_eq!(r.u32().unwrap(), BAD_SERVER_SALT);
    assert_eq!(r.i64().unwrap(), id);
    r.i32().unwrap();
    assert_eq!(r.i32().unwrap(), 48);
    let salt = r.i64().unwrap();
    let id = p.conn.msg_id();
    let packet = p.packet(id, salt, &ping(31));
    p.conn.send(&packet).await;
    let body = p.next().await.expect("pong");
    assert_eq!(body[..4], PONG.to_le_bytes(), "the new salt is accepted");

    // A msg_id from ten minutes ago: bad_msg_notification 16.
    let stale = ((now_ms() / 1000 - 600) << 32) + 4;
    let packet = p.packet(stale, salt, &ping(4));
    p.conn.send(&packet).await;
    let body = p.next().await.expect("bad_msg_notification");
    let mut r = Reader::new(&body);
    assert_eq!(r.u32().unwrap(), BAD_MSG_NOTIFICATION);
    assert_eq!(r.i64().unwrap(), stale);
    r.i32().unwrap();
    assert_eq!(r.i32().unwrap(), 16);

    // Malformed TL in a call: an error answer, and the connection goes on.
    let id = p.conn.msg_id();
    let packet = p.packet(id, salt, &[0xc4, 0xf9, 0x18, 0x6b, 1, 2, 3, 4]);
    p.conn.send(&packet).await;
    let nearest = p
        .call(json!({"_": "help.getNearestDc"}))
        .await
        .expect("still served");
    assert_eq!(nearest["_"], "nearestDc");

    // An unknown auth key: transport error -404, then the connection closes.
    let mut c = Conn::open(port, Kind::Intermediate, false).await;
    let stranger = AuthKey::new([9; 256]);
    let packet = encrypt(
        &stranger,
        Side::Client,
        &Plain {
            salt: 0,
            session_id: 1,
            msg_id: c.msg_id(),
            seq_no: 1,
            body: ping(5),
        },
    );
    c.send(&packet).await;
    assert_eq!(c.recv().await, Some((-404i32).to_le_bytes().to_vec()));
    assert_eq!(c.recv().await, None);

    // An oversized frame (2 MiB announced): closed before it arrives.
    let mut c = Conn::open(port, Kind::Abridged, false).await;
    let words = (2u32 << 20) / 4;
    let mut header = vec![0x7f];
    header.extend_from_slice(&words.to_le_bytes()[..3]);
    c.send_raw(header).await;
    assert_eq!(c.recv().await, None);

    // A garbage obfuscation header: closed.
    let mut stream = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
    stream.write_all(&[0x42; 64]).await.unwrap();
    let mut b = [0u8; 16];
    let n = tokio::time::timeout(WAIT, stream.read(&mut b))
        .await
        .expect("closed in time");
    assert!(matches!(n, Ok(0) | Err(_)));

    // A temporary key stops working when it expires, even on a connection that is using it.
    let mut conn = Conn::open(port, Kind::Intermediate, false).await;
    let (short, short_salt) = conn.handshake(&key, RsaEncoding::Old, Some(5)).await;
    let mut t = Session::new(conn, short, short_salt);
    let dc = t.call(json!({"_": "help.getNearestDc"})).await;
    assert_eq!(dc.expect("served before expiry")["_"], "nearestDc");
    tokio::time::sleep(Duration::from_millis(6100)).await;
    let id = t.conn.msg_id();
    let packet = t.packet(id, short_salt, &ping(6));
    t.conn.send(&packet).await;
    assert_eq!(t.conn.recv().await, Some((-404i32).to_le_bytes().to_vec()));
    assert_eq!(t.conn.recv().await, None);

    // With development sign-in off (production) there is no code provider: sendCode says so,
    // and a key made on the other instance (same database, same key file) is known here.
    let (_prod, _, prod_port) = setup.spawn_production().await;
    let mut q = Session::new(
        Conn::open(prod_port, Kind::Abridged, false).await,
        perm.clone(),
        perm_salt,
    );
    let sent = q
        .call(init(
            json!({"_": "auth.sendCode", "phone_number": "+15559990003", "api_id": 1,
            "api_hash": "x", "settings": {"_": "codeSettings"}}),
        ))
        .await;
    assert_eq!(sent, Err("PHONE_CODE_PROVIDER_MISSING".to_string()));
    let users = q
        .call(json!({"_": "users.getUsers", "id": [{"_": "inputUserSelf"}]}))
        .await
        .expect("the permanent key is signed in on this instance too");
    assert_eq!(users[0]["first_name"], "Raw");

    // Through all that, the first connection is still served.
    let again = s
        .call(json!({"_": "users.getUsers", "id": [{"_": "inputUserSelf"}]}))
        .await;
    assert_eq!(again.expect("still served")[0]["first_name"], "Raw");
}

/// Every method the JSON API serves, called over MTProto through the same dispatch: each must be
/// decoded into the JSON handler's parameters and its answer encoded as TL (an error for a
/// legitimate reason is fine; a parameter mismatch, an unknown method or an encoding failure is not).
async fn every_json_method(s: &mut Session, setup: &Setup) -> String {
    // Another account to talk about, made over HTTP.
    let http = reqwest::Client::new();
    let login: Value = http
        .post(format!("{}/v1/auth/login", setup.http()))
        .json(&json!({"phone": "+15559990002", "first_name": "Other"}))
        .send()
        .await
        .expect("login")
        .json()
        .await
        .expect("login body");
    let resolved = s
        .call(json!({"_": "contacts.resolvePhone", "phone": "+15559990002"}))
        .await
        .expect("resolvePhone");
    let other_user = &resolved["users"][0];
    let other = json!({"_": "inputPeerUser", "user_id": other_user["id"], "access_hash": other_user["access_hash"]});
    let other_input_user = json!({"_": "inputUser", "user_id": other_user["id"], "access_hash": other_user["access_hash"]});
    let me = json!({"_": "inputPeerSelf"});
    let dialog_me = json!({"_": "inputDialogPeer", "peer": me});
    let calls: Vec<Value> = vec![
        json!({"_": "messages.sendMessage", "peer": me, "message": "note", "random_id": 11}),
        json!({"_": "messages.sendMessage", "peer": other, "message": "hi other", "random_id": 12}),
        json!({"_": "messages.forwardMessages", "from_peer": me, "id": [1], "random_id": [13], "to_peer": me}),
        json!({"_": "messages.editMessage", "peer": me, "id": 1, "message": "edited note"}),
        json!({"_": "messages.readHistory", "peer": me, "max_id": 10}),
        json!({"_": "messages.readMessageContents", "id": [1]}),
        json!({"_": "messages.getDialogs", "offset_peer": {"_": "inputPeerEmpty"}, "limit": 10}),
        json!({"_": "messages.getPeerDialogs", "peers": [dialog_me]}),
        json!({"_": "messages.getHistory", "peer": me, "limit": 10}),
        json!({"_": "messages.getMessages", "id": [{"_": "inputMessageID", "id": 1}]}),
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
        json!({"_": "messages.getDialogFilters"}),
        json!({"_": "messages.updateDialogFilter", "id": 2, "filter": {"_": "dialogFilter", "id": 2,
            "title": {"_": "textWithEntities", "text": "Work", "entities": []},
            "pinned_peers": [], "include_peers": [other], "exclude_peers": []}}),
        json!({"_": "messages.updateDialogFiltersOrder", "order": [2]}),
        json!({"_": "messages.toggleDialogFilterTags", "enabled": true}),
        json!({"_": "contacts.importContacts", "contacts": [{"_": "inputPhoneContact", "client_id": 1,
            "phone": "+15559990002", "first_name": "Oth", "last_name": ""}]}),
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
        // No password yet: "remove" with an empty check is a no-op (tests/integration/two_step.rs
        // and telethon_2fa.py cover the rest).
        json!({"_": "account.updatePasswordSettings", "password": {"_": "inputCheckPasswordEmpty"},
            "new_settings": {"_": "account.passwordInputSettings"}}),
        json!({"_": "account.getAuthorizations"}),
        // No device has this hash: refused on its merits (tests/integration/mtproto/sessions.rs
        // ends real devices).
        json!({"_": "account.resetAuthorization", "hash": 1}),
        json!({"_": "messages.getOutboxReadDate", "peer": other, "msg_id": 2}),
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
        json!({"_": "messages.deleteMessages", "revoke": true, "id": [1]}),
        json!({"_": "messages.deleteHistory", "peer": me, "max_id": 0}),
    ];
    let served: Vec<&str> = ptslog_server::http::METHODS.to_vec();
    let mut called = std::collections::BTreeSet::from(["contacts.resolvePhone".to_string()]);
    let mut failures = Vec::new();
    for request in &calls {
        let name = request["_"].as_str().unwrap().to_string();
        called.insert(name.clone());
        match s.call(request.clone()).await {
            Ok(_) => {}
            // Refused on its merits: the other account has not read the message.
            Err(e) if name == "messages.getOutboxReadDate" && e == "MESSAGE_NOT_READ_YET" => {}
            Err(e) if name == "account.resetAuthorization" && e == "HASH_INVALID" => {}
            Err(e) if super::media_refused(&name, &e) => {}
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "methods failing over MTProto: {failures:#?}"
    );
    // userFull carries the chat's real settings (muted above; the bar was hidden above).
    let full = s
        .call(json!({"_": "users.getFullUser", "id": other_input_user}))
        .await
        .expect("getFullUser");
    assert_eq!(
        full["full_user"]["notify_settings"]["mute_until"], 2147483647,
        "{full}"
    );
    assert_eq!(full["full_user"]["settings"]["_"], "peerSettings", "{full}");
    let missing: Vec<&&str> = served.iter().filter(|m| !called.contains(**m)).collect();
    assert!(
        missing.is_empty(),
        "JSON API methods not exercised over MTProto: {missing:?}"
    );
    login["token"].as_str().expect("token").to_string()
}

const UPDATES: u32 = 0x74ae4240;

/// A message from another account is pushed to the signed-in connection `p`, not to a connection
/// of the same key that said invokeWithoutUpdates.
async fn pushes_skip_connections_without_updates(
    p: &mut Session,
    perm: &AuthKey,
    salt: i64,
    setup: &Setup,
    other_token: &str,
) {
    let conn = Conn::open(setup.mt_port, Kind::Intermediate, false).await;
    let mut quiet = Session::new(conn, perm.clone(), salt);
    let r = quiet
        .call(json!({"_": "invokeWithoutUpdates", "query": {"_": "help.getNearestDc"}}))
        .await;
    assert_eq!(r.expect("nearestDc")["_"], "nearestDc");

    let http = reqwest::Client::new();
    let rpc = |method: &str, body: Value| {
        http.post(format!("{}/v1/rpc/{method}", setup.http()))
            .bearer_auth(other_token)
            .json(&body)
            .send()
    };
    let raw: Value = rpc("contacts.resolvePhone", json!({"phone": "+15559990001"}))
        .await
        .expect("resolve")
        .json()
        .await
        .expect("resolved");
    let user = &raw["users"][0];
    let peer =
        json!({"_": "inputPeerUser", "user_id": user["id"], "access_hash": user["access_hash"]});
    let sent = rpc(
        "messages.sendMessage",
        json!({"peer": peer, "message": "pushed?", "random_id": 77}),
    )
    .await
    .expect("send");
    assert_eq!(sent.status(), 200);

    // The push reaches p ...
    let pushed = loop {
        let body = p.next().await.expect("a push");
        if body[..4] == UPDATES.to_le_bytes() {
            break decode_object(Schema::api(), &mut Reader::new(&body)).expect("updates decode");
        }
    };
    assert_eq!(pushed["updates"][0]["_"], "updateNewMessage");
    assert_eq!(pushed["updates"][0]["message"]["message"], "pushed?");
    // ... and, by the time it did, nothing reached the quiet connection: a ping's pong comes first.
    let id = quiet.conn.msg_id();
    let mut w = Writer::new();
    w.u32(PING).i64(9);
    let packet = quiet.packet(id, salt, &w.buf);
    quiet.conn.send(&packet).await;
    let first = quiet.next().await.expect("pong");
    assert_eq!(
        first[..4],
        PONG.to_le_bytes(),
        "the quiet connection got a push"
    );
}
