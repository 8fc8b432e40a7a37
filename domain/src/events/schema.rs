//! Machine-readable JSON Schemas (draft 2020-12) of every kind's payload at every version it was
//! ever written in, generated from the types that read them. The files under
//! `docs/events/schema/<kind>.v<N>.json` are these, written by `ptslog events schema --write`; a
//! test keeps the files and the code equal.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

use super::*;

/// The schema of one kind's payload at one version.
#[derive(Debug, Clone, PartialEq)]
pub struct PayloadSchema {
    pub kind: &'static str,
    pub version: i16,
    pub schema: Value,
}

impl PayloadSchema {
    /// `<kind>.v<version>.json`.
    pub fn file_name(&self) -> String {
        format!("{}.v{}.json", self.kind, self.version)
    }

    /// The file's text: pretty JSON with keys in sorted order (whatever serde_json's map order is
    /// in this build) and a final newline.
    pub fn file_text(&self) -> String {
        // A Value always serializes.
        let mut text =
            serde_json::to_string_pretty(&sorted(self.schema.clone())).unwrap_or_default();
        text.push('\n');
        text
    }
}

fn sorted(v: Value) -> Value {
    match v {
        Value::Object(map) => {
            let mut entries: Vec<(String, Value)> = map.into_iter().collect();
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            Value::Object(entries.into_iter().map(|(k, v)| (k, sorted(v))).collect())
        }
        Value::Array(items) => Value::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

fn schema_of<T: JsonSchema>(kind: &'static str, version: i16) -> PayloadSchema {
    let mut schema = SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>();
    schema.insert(
        "title".into(),
        format!("ptslog event {kind}, payload version {version}").into(),
    );
    schema.insert(
        "$comment".into(),
        "Generated from the Rust types by `ptslog events schema --write`; do not edit.".into(),
    );
    PayloadSchema {
        kind,
        version,
        schema: schema.to_value(),
    }
}

/// Today's version of a kind.
fn current<E: EventKind + JsonSchema>() -> PayloadSchema {
    schema_of::<E>(E::KIND, E::VERSION)
}

/// Every kind at every version, in catalogue order then version order. A kind that gains a version
/// keeps the old version's type (the one its upcast reads) and lists it here.
pub fn payload_schemas() -> Vec<PayloadSchema> {
    vec![
        schema_of::<NewMessageV1>(NewMessage::KIND, 1),
        current::<NewMessage>(),
        schema_of::<EditMessageV1>(EditMessage::KIND, 1),
        current::<EditMessage>(),
        current::<DeleteMessages>(),
        current::<ReadHistoryInbox>(),
        current::<ReadHistoryOutbox>(),
        current::<ReadMessageContents>(),
        schema_of::<PeerBlockedV1>(PeerBlocked::KIND, 1),
        current::<PeerBlocked>(),
        current::<DialogPinned>(),
        current::<PinnedDialogs>(),
        current::<DialogUnreadMark>(),
        current::<FolderPeers>(),
        current::<DialogFilter>(),
        current::<DialogFilterOrder>(),
        current::<DialogFilterTags>(),
        current::<ContactSaved>(),
        current::<ContactDeleted>(),
        current::<ContactsReset>(),
        current::<PeerSettings>(),
        current::<NotifySettings>(),
        current::<ProfilePhotoChanged>(),
    ]
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;

    use serde_json::json;

    use super::*;

    fn schema_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/events/schema")
    }

    fn schema(kind: &str, version: i16) -> Value {
        payload_schemas()
            .into_iter()
            .find(|s| s.kind == kind && s.version == version)
            .unwrap_or_else(|| panic!("no schema for {kind} v{version}"))
            .schema
    }

    fn validates(schema: &Value, payload: &Value) -> Result<(), String> {
        let validator = jsonschema::validator_for(schema).map_err(|e| e.to_string())?;
        let errors: Vec<String> = validator
            .iter_errors(payload)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors.join("; "))
        }
    }

    /// One payload of every kind today, as the documentation shows them.
    fn samples() -> Vec<(&'static str, Value)> {
        let message = json!({"id": 5, "message_id": 912, "peer_id": 2, "from_id": 1, "out": true,
            "date": 1764489600, "text": "hi",
            "entities": [{"_": "messageEntityBold", "offset": 0, "length": 2}],
            "silent": false, "noforwards": false,
            "reply_to": {"reply_to_msg_id": 3, "quote_text": "hello", "quote_offset": 0},
            "fwd_from": {"from_id": 7, "date": 1764480000},
            "media_unread": false, "random_id": 1234, "edit_date": 1764489700,
            "grouped_id": 77,
            "media": {"type": "document", "document": {"id": 18, "access_hash": 5,
                "date": 1764489600, "mime_type": "audio/ogg", "size": 30211,
                "blob": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
                "attributes": {"file_name": "voice.ogg",
                    "audio": {"voice": true, "duration": 3, "waveform": "0a1f"}},
                "thumbs": [{"kind": "m", "w": 320, "h": 200, "size": 9000,
                    "blob": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}],
                "stripped": "0128"}}});
        let settings = json!({"report_spam": false, "add_contact": false, "block_contact": false});
        vec![
            ("new_message", json!({ "message": message })),
            ("edit_message", json!({ "message": message })),
            (
                "delete_messages",
                json!({"ids": [5, 6], "clear_history": {"peer_id": 2, "just_clear": false}}),
            ),
            (
                "read_history_inbox",
                json!({"peer_id": 2, "max_id": 9, "still_unread_count": 0}),
            ),
            (
                "read_history_outbox",
                json!({"peer_id": 2, "max_id": 7, "date": 1764489600}),
            ),
            (
                "read_message_contents",
                json!({"ids": [4], "date": 1764489600}),
            ),
            (
                "peer_blocked",
                json!({"peer_id": 2, "blocked": true, "my_stories_from": false, "date": 1764489600}),
            ),
            (
                "dialog_pinned",
                json!({"peer_id": 2, "folder_id": 0, "pinned": true}),
            ),
            ("pinned_dialogs", json!({"folder_id": 0, "order": [3, 2]})),
            ("dialog_unread_mark", json!({"peer_id": 2, "unread": true})),
            (
                "folder_peers",
                json!({"folder_peers": [{"peer_id": 2, "folder_id": 1}]}),
            ),
            (
                "dialog_filter",
                json!({"id": 2, "filter": {"id": 2, "title": "Work", "title_entities": [],
                    "emoticon": "💼", "color": 3, "contacts": true, "non_contacts": false,
                    "groups": false, "broadcasts": false, "bots": false, "exclude_muted": false,
                    "exclude_read": false, "exclude_archived": true, "title_noanimate": false,
                    "pinned_peers": [3], "include_peers": [2], "exclude_peers": [4]}}),
            ),
            ("dialog_filter_order", json!({"order": [3, 2]})),
            ("dialog_filter_tags", json!({"enabled": true})),
            (
                "contact_saved",
                json!({"user_id": 2, "first_name": "Bobby", "last_name": "", "phone": "15550002",
                    "imported": false, "date": 1764489600, "settings": settings}),
            ),
            (
                "contact_deleted",
                json!({"user_id": 2, "settings": settings}),
            ),
            ("contacts_reset", json!({})),
            (
                "peer_settings",
                json!({"peer_id": 2, "bar_hidden": true, "settings": settings}),
            ),
            (
                "notify_settings",
                json!({"peer_id": 2, "settings": {"show_previews": true, "silent": false,
                    "mute_until": 1764489600}}),
            ),
            (
                "profile_photo_changed",
                json!({"photo": {"id": 19, "access_hash": 6, "date": 1764489600,
                    "sizes": [{"kind": "a", "w": 160, "h": 160, "size": 5000,
                        "blob": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}],
                    "stripped": "0128"}, "removed": [17], "date": 1764489600}),
            ),
        ]
    }

    #[test]
    fn every_kind_has_a_schema_for_every_version() {
        let have: BTreeSet<(String, i16)> = payload_schemas()
            .iter()
            .map(|s| (s.kind.to_string(), s.version))
            .collect();
        let want: BTreeSet<(String, i16)> = UserEvent::KINDS
            .iter()
            .flat_map(|k| {
                let current = UserEvent::current_version(k).expect("a known kind");
                (1..=current).map(move |v| (k.to_string(), v))
            })
            .collect();
        assert_eq!(have, want);
        assert_eq!(payload_schemas().len(), want.len(), "no duplicates");
    }

    #[test]
    fn the_schema_files_are_the_generated_ones() {
        let hint = "regenerate with `cargo run -p ptslog -- events schema --write`";
        let mut on_disk: BTreeSet<String> = std::fs::read_dir(schema_dir())
            .unwrap_or_else(|e| panic!("{}: {e}; {hint}", schema_dir().display()))
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json"))
            .collect();
        for s in payload_schemas() {
            let path = schema_dir().join(s.file_name());
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}; {hint}", path.display()));
            assert_eq!(text, s.file_text(), "{} is stale; {hint}", path.display());
            on_disk.remove(&s.file_name());
        }
        assert!(
            on_disk.is_empty(),
            "schema files of no kind or version: {on_disk:?}"
        );
    }

    #[test]
    fn payloads_of_every_kind_validate_against_their_schema() {
        let samples = samples();
        let kinds: BTreeSet<&str> = samples.iter().map(|(k, _)| *k).collect();
        assert_eq!(kinds, UserEvent::KINDS.iter().copied().collect());
        for (kind, payload) in samples {
            let version = UserEvent::current_version(kind).unwrap();
            let event = UserEvent::decode(kind, version, payload.clone())
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            // Read from its stored text (a log page's path), the same event.
            let from_text = UserEvent::decode_text(kind, version, &payload.to_string())
                .unwrap_or_else(|e| panic!("{kind} from text: {e}"));
            assert_eq!(from_text.payload(), event.payload(), "{kind}");
            // Both the documented sample and what the code writes for it.
            for p in [&payload, &event.payload()] {
                validates(&schema(kind, version), p)
                    .unwrap_or_else(|e| panic!("{kind} v{version} {p}: {e}"));
            }
        }
    }

    #[test]
    fn version_1_messages_are_upcast_without_media_and_v2_keeps_it() {
        let v1 = json!({"message": {"id": 5, "message_id": 912, "peer_id": 2, "from_id": 1,
            "out": true, "date": 1, "text": "hi"}});
        validates(&schema("new_message", 1), &v1).unwrap();
        for kind in ["new_message", "edit_message"] {
            let ev = UserEvent::decode(kind, 1, v1.clone()).unwrap();
            assert_eq!(ev.version(), 2);
            let from_text = UserEvent::decode_text(kind, 1, &v1.to_string()).unwrap();
            assert_eq!(
                from_text.payload(),
                ev.payload(),
                "{kind} v1 upcast from its text"
            );
            let m = match &ev {
                UserEvent::NewMessage(e) => &e.message,
                UserEvent::EditMessage(e) => &e.message,
                _ => unreachable!(),
            };
            assert_eq!((m.media.as_ref(), m.grouped_id), (None, None));
            assert!(ev.payload().get("message").unwrap().get("media").is_none());
        }
        let (_, sample) = samples().into_iter().next().unwrap();
        let ev = UserEvent::decode("new_message", 2, sample.clone()).unwrap();
        let UserEvent::NewMessage(e) = &ev else {
            unreachable!()
        };
        assert!(e.message.media.as_ref().unwrap().unread_for_recipient());
        assert_eq!(ev.payload(), sample);
        let mut bad = sample;
        bad["message"]["media"]["document"]["blob"] = json!("nothex");
        assert!(validates(&schema("new_message", 2), &bad).is_err());
        assert!(UserEvent::decode("new_message", 2, bad).is_err());
    }

    #[test]
    fn schemas_refuse_what_the_readers_refuse() {
        let v1 = json!({"peer_id": 2, "blocked": true, "date": 1764489600});
        validates(&schema("peer_blocked", 1), &v1).unwrap();
        assert!(
            validates(&schema("peer_blocked", 2), &v1).is_err(),
            "v2 requires my_stories_from"
        );
        let v2 = json!({"peer_id": 2, "blocked": true, "my_stories_from": true, "date": 1});
        assert!(validates(&schema("peer_blocked", 1), &v2).is_err());
        let bad_id = json!({"peer_id": 2, "max_id": 0, "still_unread_count": 0});
        assert!(validates(&schema("read_history_inbox", 1), &bad_id).is_err());
        assert!(UserEvent::decode("read_history_inbox", 1, bad_id).is_err());
    }
}
