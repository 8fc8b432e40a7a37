//! Property tests of what may reach the log (issue 11): every entity list `Entities` accepts
//! round-trips through its JSON exactly; no JSON at all, however deep, odd or large, panics the
//! entity parser or the event decoder (`UserEvent::decode`, every kind's `read_version`).
//!
//! Bounded in the suite; `PTSLOG_FUZZ_CASES=N` runs N cases per property (scripts/fuzz).

use proptest::prelude::*;
use ptslog_domain::entities::Entities;
use ptslog_domain::events::UserEvent;
use ptslog_domain::limits::{
    MAX_ENTITY_LANGUAGE_BYTES, MAX_ENTITY_URL_BYTES, MAX_MESSAGE_ENTITIES,
};
use ptslog_domain::message_entity::{EntityLanguage, EntityUrl, Long, MessageEntity};
use ptslog_domain::UserId;
use serde_json::{json, Map, Value};

fn cases() -> u32 {
    std::env::var("PTSLOG_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// Strings as clients send them: ASCII, any Unicode, quotes, controls and NUL.
fn text(max: usize) -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::collection::vec(any::<char>(), 0..max).prop_map(|c| c.into_iter().collect()),
        "[a-z:/.?=&\"\\\\]{0,40}",
        Just("a\u{0}b".to_string()),
    ]
}

/// Any JSON, nested up to `depth`, with keys from the API's vocabulary so parsers meet known
/// fields with wrong values.
pub fn any_json(depth: u32) -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<i32>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        text(24).prop_map(Value::from),
        Just(json!("messageEntityBold")),
        Just(json!("inputPeerSelf")),
    ];
    leaf.prop_recursive(depth, 256, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((key(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("_".to_string()),
        Just("offset".to_string()),
        Just("length".to_string()),
        Just("url".to_string()),
        Just("language".to_string()),
        Just("user_id".to_string()),
        Just("document_id".to_string()),
        Just("collapsed".to_string()),
        Just("message".to_string()),
        Just("ids".to_string()),
        Just("peer_id".to_string()),
        "[a-z_]{1,8}",
    ]
}

/// `{"x": … }` nested `n` deep (past serde_json's recursion limit when n > 127).
fn nested(n: usize) -> Value {
    let mut v = json!(1);
    for _ in 0..n {
        v = json!({ "x": v });
    }
    v
}

fn bounded(max: usize) -> impl Strategy<Value = String> {
    // Any character but the control ones (U+0000–U+001F, U+007F–U+009F).
    let ch = prop_oneof![
        proptest::char::range(' ', '~'),
        proptest::char::range('\u{a0}', '\u{d7ff}'),
        proptest::char::range('\u{e000}', '\u{10ffff}'),
    ];
    prop_oneof![
        "[a-z0-9:/._~-]{0,64}",
        (0..=max).prop_map(|n| "u".repeat(n)),
        proptest::collection::vec(ch, 0..32).prop_map(|c| c.into_iter().collect()),
    ]
    .prop_map(move |mut s: String| {
        // Cut at a character boundary to the limit.
        while s.len() > max {
            s.pop();
        }
        s
    })
}

/// A valid entity inside a text of `len` UTF-16 units (`len` > 0).
fn entity(len: i32) -> impl Strategy<Value = MessageEntity> {
    (0..len).prop_flat_map(move |offset| {
        (Just(offset), 1..=(len - offset)).prop_flat_map(|(offset, length)| {
            prop_oneof![
                Just(MessageEntity::Bold { offset, length }),
                Just(MessageEntity::Italic { offset, length }),
                Just(MessageEntity::Code { offset, length }),
                Just(MessageEntity::Spoiler { offset, length }),
                Just(MessageEntity::Unknown { offset, length }),
                bounded(MAX_ENTITY_LANGUAGE_BYTES).prop_map(move |l| MessageEntity::Pre {
                    offset,
                    length,
                    language: EntityLanguage::new(l).unwrap(),
                }),
                bounded(MAX_ENTITY_URL_BYTES).prop_map(move |u| MessageEntity::TextUrl {
                    offset,
                    length,
                    url: EntityUrl::new(u).unwrap(),
                }),
                (1..i64::MAX).prop_map(move |id| MessageEntity::MentionName {
                    offset,
                    length,
                    user_id: UserId::new(id).unwrap(),
                }),
                any::<i64>().prop_map(move |d| MessageEntity::CustomEmoji {
                    offset,
                    length,
                    document_id: Long(d),
                }),
                any::<bool>().prop_map(move |collapsed| MessageEntity::Blockquote {
                    offset,
                    length,
                    collapsed,
                }),
            ]
        })
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn accepted_entities_round_trip_exactly(
        (len, list) in (1..5000i32).prop_flat_map(|len| {
            (Just(len), proptest::collection::vec(entity(len), 0..=MAX_MESSAGE_ENTITIES))
        })
    ) {
        let parsed = Entities::parse(list.clone(), len as usize).expect("valid entities");
        let json: Vec<Value> = parsed
            .as_slice()
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect();
        // Each is the TL object: its constructor and its fields, nothing else.
        for v in &json {
            prop_assert!(v["_"].as_str().unwrap().starts_with("messageEntity"));
            prop_assert!(v.get("offset").is_some() && v.get("length").is_some());
        }
        let back = Entities::from_json(json, len as usize).expect("reads back");
        prop_assert_eq!(back.as_slice(), list.as_slice());
    }

    #[test]
    fn any_json_entity_parses_or_is_refused_without_panic(raw in proptest::collection::vec(any_json(6), 0..8), len in 0usize..100) {
        if let Ok(parsed) = Entities::from_json(raw, len) {
            for e in parsed.as_slice() {
                let (offset, length) = e.span();
                prop_assert!(offset >= 0 && length > 0 && (offset + length) as usize <= len);
            }
        }
    }

    #[test]
    fn decoding_any_payload_never_panics(
        kind in prop_oneof![
            proptest::sample::select(UserEvent::KINDS.to_vec()).prop_map(String::from),
            "[a-z_]{0,12}",
        ],
        version in prop_oneof![Just(1i16), Just(2i16), any::<i16>()],
        payload in any_json(8),
    ) {
        if let Ok(event) = UserEvent::decode(&kind, version, payload) {
            // What decodes is today's shape and reads back as itself.
            let again = UserEvent::decode(event.kind(), event.version(), event.payload()).unwrap();
            let from_text =
                UserEvent::decode_text(event.kind(), event.version(), &event.payload().to_string())
                    .unwrap();
            prop_assert_eq!(&from_text, &event);
            prop_assert_eq!(again, event);
        }
    }
}

#[test]
fn deep_and_huge_payloads_are_refused_not_crashed() {
    // Answers, whatever it is (a kind without fields ignores them), and never panics.
    for kind in UserEvent::KINDS {
        let deep = json!({"message": nested(126), "ids": nested(126), "peer_id": nested(126)});
        let _ = UserEvent::decode_text(kind, 1, &deep.to_string());
        let _ = UserEvent::decode(kind, 1, deep);
    }
    let deep = json!({"message": nested(126)});
    assert!(UserEvent::decode_text("new_message", 1, &deep.to_string()).is_err());
    assert!(UserEvent::decode("new_message", 1, deep).is_err());
    let huge = json!({"message": {"text": "x".repeat(1 << 20)}});
    assert!(UserEvent::decode_text("new_message", 1, &huge.to_string()).is_err());
    assert!(UserEvent::decode("new_message", 1, huge).is_err());
}
