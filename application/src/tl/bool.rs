//! TL `Bool` as an answer: `{"_": "boolTrue"}` / `{"_": "boolFalse"}` (the JSON API's shape; the
//! MTProto encoder writes the constructor).

use serde::{Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bool(pub bool);

impl Serialize for Bool {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut o = s.serialize_struct("Bool", 1)?;
        o.serialize_field("_", if self.0 { "boolTrue" } else { "boolFalse" })?;
        o.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_the_constructor() {
        assert_eq!(
            serde_json::to_value(Bool(true)).unwrap(),
            serde_json::json!({"_": "boolTrue"})
        );
        assert_eq!(
            serde_json::to_string(&Bool(false)).unwrap(),
            r#"{"_":"boolFalse"}"#
        );
    }
}
