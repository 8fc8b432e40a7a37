//! A push frame as TL, encoded once per (frame, layer) and shared by every connection of that
//! layer (the frame's [`Encodings`](application::fanout::Encodings) keep one slot per supported
//! layer); only the encryption is per connection.

use std::sync::Arc;

use application::fanout::{Frame, ENCODING_SLOTS};
use mtproto::tl::{encode_object, Schema, Writer, LAYERS};

// Every supported layer has its slot on the frame.
const _: () = assert!(LAYERS.len() <= ENCODING_SLOTS);

/// The frame in the TL of the schema that answers `layer` (see [`Schema::for_layer`]); `None`
/// when it does not encode (logged once per frame and layer).
pub(super) fn frame_tl(frame: &Frame, layer: Option<i32>) -> Option<Arc<[u8]>> {
    let schema = Schema::for_layer(layer);
    let slot = LAYERS
        .iter()
        .position(|(l, _)| *l == schema.layer)
        .unwrap_or(ENCODING_SLOTS);
    frame
        .encodings
        .get_or_encode(slot, || encode_json(schema, &frame.json))
}

/// A JSON TL object (a frame's, or `updatesTooLong`) as TL bytes.
pub(super) fn encode_json(schema: &Schema, json: &str) -> Option<Vec<u8>> {
    let value: serde_json::Value = serde_json::from_str(json).ok()?;
    let mut w = Writer::new();
    if let Err(e) = encode_object(schema, &value, &mut w) {
        tracing::warn!(error = %e, layer = schema.layer, "a push frame did not encode as TL");
        return None;
    }
    Some(w.buf)
}

#[cfg(test)]
mod tests {
    use mtproto::tl::{decode_object, Reader};

    use super::*;

    fn frame() -> Frame {
        let json = serde_json::json!({"_": "updates", "updates": [{"_": "updateReadMessagesContents",
            "messages": [], "pts": 3, "pts_count": 1, "date": 1764489600}],
            "users": [], "chats": [], "date": 1764489600, "seq": 0});
        Frame::new(3, Arc::from(json.to_string()), 0, false)
    }

    #[test]
    fn devices_of_one_layer_share_one_encoding() {
        let f = frame();
        // Two devices' copies of the frame (the hub clones it into each device's queue).
        let (a, b) = (f.clone(), f.clone());
        let first = frame_tl(&a, Some(230)).expect("encodes");
        let second = frame_tl(&b, Some(229)).expect("encodes");
        // The same allocation: the second device did not encode again.
        assert!(Arc::ptr_eq(&first, &second));
        let none = frame_tl(&b, None).expect("encodes");
        assert!(Arc::ptr_eq(&first, &none), "no layer is the newest");
        let old = frame_tl(&b, Some(152)).expect("encodes");
        assert!(!Arc::ptr_eq(&first, &old), "another layer, another slot");
        assert!(Arc::ptr_eq(&old, &frame_tl(&a, Some(100)).unwrap()));
        let decoded = decode_object(Schema::api(), &mut Reader::new(&first)).unwrap();
        assert_eq!(decoded["updates"][0]["pts"], 3);
        assert_eq!(
            &*first,
            &encode_json(Schema::for_layer(Some(230)), &f.json).unwrap()[..]
        );
    }
}
