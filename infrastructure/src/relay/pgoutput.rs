//! Decoding the two pgoutput messages the relay needs: `Relation` (a table's columns, sent before
//! the first change of that table in a session and again after DDL) and `Insert` (a new row, in
//! text format). pgwire-replication hands these over as raw `XLogData` payloads and parses only
//! Begin/Commit itself. Format: PostgreSQL docs, "Logical Replication Message Formats" (protocol
//! version 1).
//!
//! Columns are looked up by name from the Relation message rather than by position, so a column
//! added to the log later does not shift what the relay reads.

use std::collections::HashMap;

use thiserror::Error;

#[derive(Debug, Error, PartialEq, Eq)]
pub enum DecodeError {
    #[error("pgoutput message truncated while reading {0}")]
    Truncated(&'static str),
    #[error("pgoutput: {0}")]
    Invalid(String),
}

/// A table's shape as the Relation message announced it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    pub id: u32,
    pub namespace: String,
    pub name: String,
    pub columns: Vec<String>,
}

/// One column value of a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    Null,
    /// The value's text form (the type's output function).
    Text(String),
    /// A TOASTed value that did not change; only UPDATE sends it.
    Unchanged,
}

/// The messages the relay acts on; everything else is `Other`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    Relation(Relation),
    Insert {
        relation_id: u32,
        values: Vec<Value>,
    },
    Other(u8),
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if self.0.len() < n {
            return Err(DecodeError::Truncated(what));
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Ok(head)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        let b = self.take(2, what)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn cstr(&mut self, what: &'static str) -> Result<String, DecodeError> {
        let end = self
            .0
            .iter()
            .position(|&b| b == 0)
            .ok_or(DecodeError::Truncated(what))?;
        let s = std::str::from_utf8(&self.0[..end])
            .map_err(|e| DecodeError::Invalid(format!("{what}: {e}")))?
            .to_string();
        self.0 = &self.0[end + 1..];
        Ok(s)
    }
}

/// Decodes one pgoutput message (the payload of an `XLogData`).
pub fn decode(data: &[u8]) -> Result<Message, DecodeError> {
    let mut r = Reader(data);
    match r.u8("message tag")? {
        b'R' => {
            let id = r.u32("relation id")?;
            let namespace = r.cstr("namespace")?;
            let name = r.cstr("relation name")?;
            let _replica_identity = r.u8("replica identity")?;
            let n = r.u16("column count")?;
            let mut columns = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let _flags = r.u8("column flags")?;
                columns.push(r.cstr("column name")?);
                let _type_oid = r.u32("column type")?;
                let _type_modifier = r.u32("column type modifier")?;
            }
            Ok(Message::Relation(Relation {
                id,
                namespace,
                name,
                columns,
            }))
        }
        b'I' => {
            let relation_id = r.u32("relation id")?;
            match r.u8("new tuple marker")? {
                b'N' => {}
                other => {
                    return Err(DecodeError::Invalid(format!(
                        "insert without a new tuple (marker {other:#x})"
                    )))
                }
            }
            let values = tuple(&mut r)?;
            Ok(Message::Insert {
                relation_id,
                values,
            })
        }
        other => Ok(Message::Other(other)),
    }
}

fn tuple(r: &mut Reader<'_>) -> Result<Vec<Value>, DecodeError> {
    let n = r.u16("tuple column count")?;
    let mut values = Vec::with_capacity(n as usize);
    for _ in 0..n {
        values.push(match r.u8("tuple value kind")? {
            b'n' => Value::Null,
            b'u' => Value::Unchanged,
            b't' => {
                let len = r.u32("text length")? as usize;
                let bytes = r.take(len, "text value")?;
                Value::Text(
                    std::str::from_utf8(bytes)
                        .map_err(|e| DecodeError::Invalid(format!("text value: {e}")))?
                        .to_string(),
                )
            }
            b'b' => {
                return Err(DecodeError::Invalid(
                    "binary tuple values (the relay asks for text)".into(),
                ))
            }
            other => {
                return Err(DecodeError::Invalid(format!(
                    "unknown tuple value kind {other:#x}"
                )))
            }
        });
    }
    Ok(values)
}

/// The relations seen in this replication session, to read inserted rows by column name.
#[derive(Debug, Default)]
pub struct Relations(HashMap<u32, Relation>);

impl Relations {
    pub fn learn(&mut self, relation: Relation) {
        self.0.insert(relation.id, relation);
    }

    pub fn get(&self, id: u32) -> Option<&Relation> {
        self.0.get(&id)
    }
}

/// An inserted row, by column name.
#[derive(Debug)]
pub struct Row<'a> {
    relation: &'a Relation,
    values: Vec<Value>,
}

impl<'a> Row<'a> {
    pub fn new(relation: &'a Relation, values: Vec<Value>) -> Result<Self, DecodeError> {
        if values.len() != relation.columns.len() {
            return Err(DecodeError::Invalid(format!(
                "row of {}.{} has {} values for {} columns",
                relation.namespace,
                relation.name,
                values.len(),
                relation.columns.len()
            )));
        }
        Ok(Self { relation, values })
    }

    pub fn relation(&self) -> &Relation {
        self.relation
    }

    /// The text of a NOT NULL column.
    pub fn text(&self, column: &'static str) -> Result<&str, DecodeError> {
        let i = self
            .relation
            .columns
            .iter()
            .position(|c| c == column)
            .ok_or_else(|| {
                DecodeError::Invalid(format!("{} has no column {column}", self.relation.name))
            })?;
        match &self.values[i] {
            Value::Text(s) => Ok(s),
            Value::Null => Err(DecodeError::Invalid(format!("column {column} is NULL"))),
            Value::Unchanged => Err(DecodeError::Invalid(format!(
                "column {column} came as an unchanged TOAST value"
            ))),
        }
    }

    pub fn parse<T: std::str::FromStr>(&self, column: &'static str) -> Result<T, DecodeError>
    where
        T::Err: std::fmt::Display,
    {
        let text = self.text(column)?;
        text.parse()
            .map_err(|e| DecodeError::Invalid(format!("column {column} = {text:?}: {e}")))
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds pgoutput messages as the server sends them.
    pub(crate) fn relation_message(id: u32, name: &str, columns: &[&str]) -> Vec<u8> {
        let mut m = vec![b'R'];
        m.extend(id.to_be_bytes());
        m.extend(b"public\0");
        m.extend(name.as_bytes());
        m.push(0);
        m.push(b'd');
        m.extend((columns.len() as u16).to_be_bytes());
        for c in columns {
            m.push(0);
            m.extend(c.as_bytes());
            m.push(0);
            m.extend(25u32.to_be_bytes());
            m.extend((-1i32).to_be_bytes());
        }
        m
    }

    pub(crate) fn insert_message(id: u32, values: &[Option<&str>]) -> Vec<u8> {
        let mut m = vec![b'I'];
        m.extend(id.to_be_bytes());
        m.push(b'N');
        m.extend((values.len() as u16).to_be_bytes());
        for v in values {
            match v {
                None => m.push(b'n'),
                Some(s) => {
                    m.push(b't');
                    m.extend((s.len() as u32).to_be_bytes());
                    m.extend(s.as_bytes());
                }
            }
        }
        m
    }

    #[test]
    fn relation_and_insert_decode_and_read_by_name() {
        let Message::Relation(rel) = decode(&relation_message(7, "t", &["a", "b", "c"])).unwrap()
        else {
            panic!("not a relation");
        };
        assert_eq!(
            (rel.id, rel.namespace.as_str(), rel.name.as_str()),
            (7, "public", "t")
        );
        let mut rels = Relations::default();
        rels.learn(rel);
        let Message::Insert {
            relation_id,
            values,
        } = decode(&insert_message(7, &[Some("1"), None, Some("héllo")])).unwrap()
        else {
            panic!("not an insert");
        };
        let row = Row::new(rels.get(relation_id).unwrap(), values).unwrap();
        assert_eq!(row.parse::<i64>("a").unwrap(), 1);
        assert_eq!(row.text("c").unwrap(), "héllo");
        assert!(row.text("b").is_err());
        assert!(row.text("zzz").is_err());
    }

    #[test]
    fn other_messages_pass_and_garbage_is_an_error() {
        assert_eq!(decode(b"Yxyz").unwrap(), Message::Other(b'Y'));
        assert_eq!(
            decode(b"").unwrap_err(),
            DecodeError::Truncated("message tag")
        );
        let mut truncated = insert_message(7, &[Some("12345")]);
        truncated.truncate(truncated.len() - 2);
        assert!(decode(&truncated).is_err());
        let rel = Relation {
            id: 1,
            namespace: "p".into(),
            name: "t".into(),
            columns: vec!["a".into()],
        };
        assert!(Row::new(&rel, vec![]).is_err());
    }
}
