//! TL `bytes` in an answer: hex in JSON (the JSON API's contract, as every `bytes` there), the
//! bytes themselves in a compact format (MTProto's TL encoder), so a file part is never hexed
//! only to be unhexed.

use serde::{Serialize, Serializer};

#[derive(Clone, Default, PartialEq, Eq)]
pub struct Bytes(pub Vec<u8>);

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes({} bytes)", self.0.len())
    }
}

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            s.serialize_str(&hex::encode(&self.0))
        } else {
            s.serialize_bytes(&self.0)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_hex() {
        assert_eq!(
            serde_json::to_string(&Bytes(vec![0xff, 0xd8, 0])).unwrap(),
            r#""ffd800""#
        );
    }
}
