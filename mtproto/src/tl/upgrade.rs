//! Requests made in an older layer's form, reshaped into the newest layer's JSON shape, which is
//! the one the application reads. Most older forms need nothing: a parameter a layer added is
//! simply absent (optional, or zero) and one it removed is ignored. What remains are the few
//! parameters that changed type or moved; each rule recognises the old shape itself (the newest
//! form never has it), so a request already in the newest form passes through unchanged.

use serde_json::{json, Map, Value};

/// Rewrites `request` (a decoded function call, nested objects included) into the newest
/// layer's shape, in place.
pub fn upgrade_request(request: &mut Value) {
    match request {
        Value::Object(o) => {
            upgrade_object(o);
            o.values_mut().for_each(upgrade_request);
        }
        Value::Array(items) => items.iter_mut().for_each(upgrade_request),
        _ => {}
    }
}

fn upgrade_object(o: &mut Map<String, Value>) {
    match o.get("_").and_then(Value::as_str) {
        // In layer 152 a reply is `reply_to_msg_id` (and `top_msg_id`, the thread); newer layers
        // (198 already) have an `InputReplyTo`.
        Some("messages.sendMessage" | "messages.sendMedia" | "messages.sendMultiMedia")
            if !o.contains_key("reply_to") =>
        {
            let Some(msg_id) = o.remove("reply_to_msg_id") else {
                return;
            };
            let mut reply = json!({"_": "inputReplyToMessage", "reply_to_msg_id": msg_id});
            if let Some(top) = o.remove("top_msg_id") {
                reply["top_msg_id"] = top;
            }
            o.insert("reply_to".into(), reply);
        }
        // A folder's title was a plain string before it could carry custom emoji.
        Some("dialogFilter" | "dialogFilterChatlist") => {
            if let Some(Value::String(title)) = o.get("title") {
                let title = json!({"_": "textWithEntities", "text": title, "entities": []});
                o.insert("title".into(), title);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::tl::{decode_object, encode_object, Reader, Schema, Writer};

    /// Encodes `v` with layer 152's own constructors and decodes it as the server reads requests.
    fn as_152_request(v: Value) -> Value {
        let mut w = Writer::new();
        encode_object(Schema::exact(152).unwrap(), &v, &mut w).unwrap();
        let mut request = decode_object(Schema::api(), &mut Reader::new(&w.buf)).unwrap();
        upgrade_request(&mut request);
        request
    }

    #[test]
    fn a_152_reply_becomes_an_input_reply_to() {
        let r = as_152_request(json!({"_": "messages.sendMessage",
            "peer": {"_": "inputPeerSelf"}, "reply_to_msg_id": 7, "message": "re", "random_id": 1}));
        assert_eq!(
            r["reply_to"],
            json!({"_": "inputReplyToMessage", "reply_to_msg_id": 7})
        );
        assert!(r.get("reply_to_msg_id").is_none());
        // Without a reply there is none.
        let r = as_152_request(json!({"_": "messages.sendMessage",
            "peer": {"_": "inputPeerSelf"}, "message": "x", "random_id": 2}));
        assert!(r.get("reply_to").is_none());
    }

    #[test]
    fn a_152_folder_title_becomes_text_with_entities() {
        let r = as_152_request(json!({"_": "messages.updateDialogFilter", "id": 2,
            "filter": {"_": "dialogFilter", "id": 2, "title": "Work",
                "pinned_peers": [], "include_peers": [], "exclude_peers": []}}));
        assert_eq!(
            r["filter"]["title"],
            json!({"_": "textWithEntities", "text": "Work", "entities": []})
        );
    }

    #[test]
    fn a_request_in_the_newest_form_is_unchanged() {
        let v = json!({"_": "messages.sendMessage", "peer": {"_": "inputPeerSelf"},
            "reply_to": {"_": "inputReplyToMessage", "reply_to_msg_id": 3, "top_msg_id": 1},
            "message": "x", "random_id": 3});
        let mut w = Writer::new();
        encode_object(Schema::api(), &v, &mut w).unwrap();
        let decoded = decode_object(Schema::api(), &mut Reader::new(&w.buf)).unwrap();
        let mut upgraded = decoded.clone();
        upgrade_request(&mut upgraded);
        assert_eq!(upgraded, decoded);
    }
}
