//! A blob key in payloads and read models: its 64 hex characters.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::BlobKey;

impl Serialize for BlobKey {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.hex())
    }
}

impl<'de> Deserialize<'de> for BlobKey {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        BlobKey::from_hex(&s).ok_or_else(|| serde::de::Error::custom("not a blob key (64 hex)"))
    }
}

impl schemars::JsonSchema for BlobKey {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "BlobKey".into()
    }
    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "pattern": "^[0-9a-f]{64}$",
            "description": "SHA-256 of the blob's bytes, lower-case hex"
        })
    }
}

/// Bytes in payloads as lower-case hex (what the TL JSON shape uses for `bytes`).
pub(crate) mod hex_bytes {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hex::encode(v))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        hex::decode(s).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_written_as_its_hex() {
        let k = BlobKey::of(b"x");
        let v = serde_json::to_value(k).unwrap();
        assert_eq!(v, serde_json::Value::String(k.hex()));
        assert_eq!(serde_json::from_value::<BlobKey>(v).unwrap(), k);
        assert!(serde_json::from_value::<BlobKey>("zz".into()).is_err());
    }
}
