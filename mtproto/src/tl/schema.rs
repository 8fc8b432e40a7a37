//! The API schemas, parsed once at first use: `schema/api.tl` (layer 230, the current one) and
//! `schema/api-198.tl` (layer 198, which GramJS 2.26 speaks). Each looks up a constructor it does
//! not have in the other, so a request decodes whichever of the two layers its ids come from, and an
//! answer encodes with the client's layer's definition of each constructor where it has one.

use std::collections::HashMap;
use std::sync::OnceLock;

/// The parameter types the codec knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamType {
    /// `#`: a bit field computed from the conditional parameters that name it.
    Flags,
    /// `flags.N?T`.
    Conditional {
        field: String,
        bit: u32,
        inner: Box<ParamType>,
    },
    /// `true` (only meaningful inside a condition: present or not).
    True,
    Int,
    Long,
    Double,
    String,
    Bytes,
    Int128,
    Int256,
    Bool,
    /// `Vector<T>`: boxed.
    Vector(Box<ParamType>),
    /// `vector<T>`: bare.
    BareVector(Box<ParamType>),
    /// `!X`: any object, usually a function (`invokeWithLayer`'s query).
    Generic,
    /// A boxed type by name (`User`, `messages.Dialogs`).
    Boxed(String),
    /// A bare constructor by name (`%Message` or a lowercase type).
    Bare(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    pub name: String,
    pub ty: ParamType,
}

/// One constructor or function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Combinator {
    pub id: u32,
    pub name: String,
    pub params: Vec<Param>,
    /// The type it builds (or, for a function, returns).
    pub result: String,
    pub is_function: bool,
}

#[derive(Debug, Default)]
pub struct Schema {
    pub layer: i32,
    by_id: HashMap<u32, Combinator>,
    by_name: HashMap<String, u32>,
    /// Where a lookup that misses goes next (resolved at lookup time, so two schemas can name
    /// each other; a fallback's own fallback is never followed).
    fallback: Option<fn() -> &'static Schema>,
}

const API_TL: &str = include_str!("../../schema/api.tl");
const API_198_TL: &str = include_str!("../../schema/api-198.tl");

/// The oldest layer with a schema of its own; older clients are answered in it too.
pub const OLDEST_LAYER: i32 = 198;

impl Schema {
    /// The current API schema (layer 230), falling back to layer 198's constructors.
    pub fn api() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| Schema {
            fallback: Some(Schema::layer_198),
            ..Schema::parse(API_TL)
        })
    }

    /// Layer 198's schema, falling back to the current one's constructors.
    pub fn layer_198() -> &'static Schema {
        static SCHEMA: OnceLock<Schema> = OnceLock::new();
        SCHEMA.get_or_init(|| Schema {
            fallback: Some(Schema::api),
            ..Schema::parse(API_198_TL)
        })
    }

    /// The schema to answer a client of this layer with (`None`: not announced yet, the
    /// current one). Layers from 199 to 229 get the current schema: their constructors are
    /// nearer to 230's than to 198's (Telethon and Pyrogram forks at 229 differ from 230 in six
    /// constructors none of which is served).
    pub fn for_layer(layer: Option<i32>) -> &'static Schema {
        match layer {
            Some(l) if l <= OLDEST_LAYER => Schema::layer_198(),
            _ => Schema::api(),
        }
    }

    pub fn by_id(&self, id: u32) -> Option<&Combinator> {
        self.by_id.get(&id).or_else(|| {
            let f = (self.fallback?)();
            f.by_id.get(&id)
        })
    }

    pub fn by_name(&self, name: &str) -> Option<&Combinator> {
        match self.by_name.get(name) {
            Some(id) => self.by_id.get(id),
            None => {
                let f = (self.fallback?)();
                f.by_name.get(name).and_then(|id| f.by_id.get(id))
            }
        }
    }

    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// Parses TL schema text; lines that are not combinators (comments, sections' markers, the
    /// built-in `vector`) are skipped.
    pub fn parse(text: &str) -> Schema {
        let mut schema = Schema::default();
        let mut functions = false;
        for raw in text.lines() {
            let line = raw.trim();
            if let Some(rest) = line.strip_prefix("// LAYER") {
                schema.layer = rest.trim().parse().unwrap_or(0);
                continue;
            }
            let line = line.split("//").next().unwrap_or("").trim();
            if line == "---functions---" {
                functions = true;
                continue;
            }
            if line == "---types---" {
                functions = false;
                continue;
            }
            if let Some(c) = parse_line(line, functions) {
                schema.by_name.insert(c.name.clone(), c.id);
                schema.by_id.insert(c.id, c);
            }
        }
        schema
    }
}

fn parse_line(line: &str, is_function: bool) -> Option<Combinator> {
    let line = line.strip_suffix(';')?.trim();
    let (lhs, result) = line.split_once(" = ")?;
    let mut words = lhs.split_whitespace();
    let (name, id) = words.next()?.split_once('#')?;
    let id = u32::from_str_radix(id, 16).ok()?;
    if name == "vector" {
        return None;
    }
    let mut params = Vec::new();
    for word in words {
        if word.starts_with('{') || word == "#" || word == "[" || word == "]" {
            continue;
        }
        let (pname, ty) = word.split_once(':')?;
        params.push(Param {
            name: pname.to_string(),
            ty: parse_type(ty)?,
        });
    }
    Some(Combinator {
        id,
        name: name.to_string(),
        params,
        result: result.trim().to_string(),
        is_function,
    })
}

pub(crate) fn parse_type(ty: &str) -> Option<ParamType> {
    if let Some((cond, inner)) = ty.split_once('?') {
        let (field, bit) = cond.split_once('.')?;
        return Some(ParamType::Conditional {
            field: field.to_string(),
            bit: bit.parse().ok().filter(|b| *b < 32)?,
            inner: Box::new(parse_type(inner)?),
        });
    }
    Some(match ty {
        "#" => ParamType::Flags,
        "true" => ParamType::True,
        "int" => ParamType::Int,
        "long" => ParamType::Long,
        "double" => ParamType::Double,
        "string" => ParamType::String,
        "bytes" => ParamType::Bytes,
        "int128" => ParamType::Int128,
        "int256" => ParamType::Int256,
        "Bool" => ParamType::Bool,
        "!X" => ParamType::Generic,
        _ => {
            if let Some(inner) = ty.strip_prefix("Vector<").and_then(|t| t.strip_suffix('>')) {
                ParamType::Vector(Box::new(parse_type(inner)?))
            } else if let Some(inner) = ty.strip_prefix("vector<").and_then(|t| t.strip_suffix('>'))
            {
                ParamType::BareVector(Box::new(parse_type(inner)?))
            } else if let Some(bare) = ty.strip_prefix('%') {
                ParamType::Bare(bare.to_string())
            } else {
                let last = ty.rsplit('.').next().unwrap_or(ty);
                if last.starts_with(|c: char| c.is_ascii_lowercase()) {
                    ParamType::Bare(ty.to_string())
                } else {
                    ParamType::Boxed(ty.to_string())
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_api_schema_parses() {
        let s = Schema::api();
        assert_eq!(s.layer, 230);
        assert!(s.len() > 2000, "{}", s.len());
        let send = s.by_name("messages.sendMessage").unwrap();
        assert!(send.is_function);
        assert_eq!(send.id, 0xfef48f62);
        let user = s.by_name("user").unwrap();
        assert_eq!(user.result, "User");
        assert!(matches!(user.params[0].ty, ParamType::Flags));
        let init = s.by_name("initConnection").unwrap();
        assert_eq!(init.params.last().unwrap().ty, ParamType::Generic);
    }

    #[test]
    fn layer_198_answers_with_its_own_constructors_and_decodes_either() {
        let old = Schema::for_layer(Some(198));
        assert_eq!(old.layer, 198);
        assert_eq!(old.by_name("user").unwrap().id, 0x4b46c37e);
        assert_ne!(Schema::api().by_name("user").unwrap().id, 0x4b46c37e);
        // Each finds the other's ids (a request decodes whatever layer it was made in) …
        assert_eq!(Schema::api().by_id(0x4b46c37e).unwrap().name, "user");
        assert!(old
            .by_id(Schema::api().by_name("user").unwrap().id)
            .is_some());
        // … and a constructor only the newer layer has is still found by name.
        assert!(old.by_name("messages.getSavedReactionTags").is_some());
        assert!(std::ptr::eq(Schema::for_layer(Some(229)), Schema::api()));
        assert!(std::ptr::eq(Schema::for_layer(None), Schema::api()));
    }
}
