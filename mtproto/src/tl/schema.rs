//! The API schemas, one per supported layer ([`LAYERS`]), parsed once at first use. Each looks up
//! a constructor it does not have in the others (newer layers first, nearest first), so a request
//! decodes whichever layer its ids come from, and an answer encodes with the client's layer's
//! definition of each constructor where that layer has one.

use rustc_hash::FxHashMap;
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
    /// For each parameter, the index of the `#` parameter its condition names (`flags.N?T`),
    /// resolved once here so that writing an object never compares parameter names.
    pub flag_of: Vec<Option<usize>>,
    /// For each index `i` (and one past the last), the first parameter at `i` or after it that
    /// is always written (a `#` word or a required parameter), so that a writer skipping absent
    /// conditional parameters jumps over them instead of looking at each.
    pub next_written: Vec<usize>,
}

#[derive(Debug, Default)]
pub struct Schema {
    pub layer: i32,
    by_id: FxHashMap<u32, Combinator>,
    by_name: FxHashMap<String, u32>,
    /// Where a lookup that misses goes next: indices into [`Schema::supported`], in order (empty
    /// for a schema parsed on its own, which finds only its own constructors).
    fallbacks: Vec<usize>,
}

/// Every layer with a schema of its own, oldest first: the layer and its TL text (the files and
/// where each comes from: `schema/README.md`). Supporting a further layer is one file and one row.
pub const LAYERS: &[(i32, &str)] = &[
    (152, include_str!("../../schema/api-152.tl")),
    (198, include_str!("../../schema/api-198.tl")),
    (230, include_str!("../../schema/api.tl")),
];

/// The oldest layer with a schema of its own; older clients are answered in it too.
pub const OLDEST_LAYER: i32 = LAYERS[0].0;

/// The newest layer with a schema of its own (and the one answers use before a client says its
/// layer).
pub const NEWEST_LAYER: i32 = LAYERS[LAYERS.len() - 1].0;

impl Schema {
    /// Every schema of [`LAYERS`], in its order, each falling back to the others.
    pub fn supported() -> &'static [Schema] {
        static ALL: OnceLock<Vec<Schema>> = OnceLock::new();
        ALL.get_or_init(|| {
            (0..LAYERS.len())
                .map(|i| Schema {
                    // Newer layers first (a constructor a layer lacks is usually one added after
                    // it), nearest first; then the older ones, nearest first.
                    fallbacks: (i + 1..LAYERS.len()).chain((0..i).rev()).collect(),
                    ..Schema::parse(LAYERS[i].1)
                })
                .collect()
        })
    }

    /// The newest schema (what requests are decoded with: it finds every layer's ids).
    pub fn api() -> &'static Schema {
        &Schema::supported()[LAYERS.len() - 1]
    }

    /// The schema of exactly this supported layer (falling back to the others for what it
    /// lacks), if there is one.
    pub fn layer(layer: i32) -> Option<&'static Schema> {
        let i = LAYERS.iter().position(|(l, _)| *l == layer)?;
        Some(&Schema::supported()[i])
    }

    /// Layer 198's schema.
    pub fn layer_198() -> &'static Schema {
        Schema::layer(198).expect("198 is in LAYERS")
    }

    /// The schema to answer a client of this layer with: the oldest supported layer at or above
    /// the client's (a client a few layers behind a schema meets few changed constructors
    /// among the served ones: Telethon and Kurigram at 229 differ from 230 in six, none served),
    /// the newest for a client newer than all of them, or that has not said (`None`).
    pub fn for_layer(layer: Option<i32>) -> &'static Schema {
        let all = Schema::supported();
        match layer {
            Some(l) => LAYERS
                .iter()
                .position(|(supported, _)| *supported >= l)
                .map_or_else(Schema::api, |i| &all[i]),
            None => Schema::api(),
        }
    }

    /// The schema of exactly this supported layer and nothing else (no fallback): to check that
    /// an encoded object uses only that layer's constructors, as a client of it would.
    pub fn exact(layer: i32) -> Option<&'static Schema> {
        static ALL: OnceLock<Vec<Schema>> = OnceLock::new();
        let i = LAYERS.iter().position(|(l, _)| *l == layer)?;
        Some(&ALL.get_or_init(|| LAYERS.iter().map(|(_, t)| Schema::parse(t)).collect())[i])
    }

    pub fn by_id(&self, id: u32) -> Option<&Combinator> {
        self.by_id.get(&id).or_else(|| {
            let all = Schema::supported();
            self.fallbacks.iter().find_map(|i| all[*i].by_id.get(&id))
        })
    }

    pub fn by_name(&self, name: &str) -> Option<&Combinator> {
        let own = |s: &'static Schema| s.by_name.get(name).and_then(|id| s.by_id.get(id));
        match self.by_name.get(name) {
            Some(id) => self.by_id.get(id),
            None => {
                let all = Schema::supported();
                self.fallbacks.iter().find_map(|i| own(&all[*i]))
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
    let flag_of = params
        .iter()
        .map(|p| match &p.ty {
            ParamType::Conditional { field, .. } => params
                .iter()
                .position(|f| f.name == *field && matches!(f.ty, ParamType::Flags)),
            _ => None,
        })
        .collect();
    let mut next_written = vec![params.len(); params.len() + 1];
    for i in (0..params.len()).rev() {
        next_written[i] = match params[i].ty {
            ParamType::Conditional { .. } => next_written[i + 1],
            _ => i,
        };
    }
    Some(Combinator {
        id,
        name: name.to_string(),
        params,
        result: result.trim().to_string(),
        is_function,
        flag_of,
        next_written,
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
    fn each_parameter_knows_the_next_one_always_written() {
        let s = Schema::parse("t#1 flags:# a:flags.0?int b:int c:flags.1?true d:flags.2?long = T;");
        let t = s.by_name("t").unwrap();
        // flags, b, then nothing but conditionals to the end.
        assert_eq!(t.next_written, vec![0, 2, 2, 5, 5, 5]);
        let message = Schema::api().by_name("message").unwrap();
        let id = message.params.iter().position(|p| p.name == "id").unwrap();
        assert_eq!(message.next_written[id], id);
        assert_eq!(
            message.next_written[message.params.len()],
            message.params.len()
        );
    }

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

    #[test]
    fn every_layer_row_is_the_layer_its_file_says() {
        assert!(LAYERS.windows(2).all(|w| w[0].0 < w[1].0), "oldest first");
        for (layer, _) in LAYERS {
            let s = Schema::layer(*layer).unwrap();
            assert_eq!(s.layer, *layer);
            assert!(s.len() > 1000, "{layer}: {}", s.len());
            assert_eq!(Schema::exact(*layer).unwrap().len(), s.len());
        }
        assert_eq!((OLDEST_LAYER, NEWEST_LAYER), (152, 230));
    }

    /// TDesktop 4.6.5's layer: its own ids for what it defines, the newer layers' for the rest.
    #[test]
    fn layer_152_answers_with_its_own_constructors() {
        let s = Schema::for_layer(Some(152));
        assert_eq!(s.layer, 152);
        for (name, id) in [
            ("config", 0x232566ac),
            ("user", 0x8f97c628),
            ("message", 0x38116ee0),
            ("auth.signUp", 0x80eee427),
            ("updates.getDifference", 0x25939651),
            ("messages.getDialogFilters", 0xf19ed96d),
            ("messages.sendMessage", 0x1cc20387),
            ("help.getAppConfig", 0x98914110),
        ] {
            assert_eq!(s.by_name(name).unwrap().id, id, "{name}");
            // A request in 152's form decodes with the schema requests are read with.
            assert_eq!(Schema::api().by_id(id).unwrap().name, name);
        }
        // What 152 lacks comes from the nearest newer layer.
        assert_eq!(
            s.by_name("messages.dialogFilters").unwrap().id,
            Schema::layer_198()
                .by_name("messages.dialogFilters")
                .unwrap()
                .id
        );
        assert!(Schema::exact(152)
            .unwrap()
            .by_name("messages.dialogFilters")
            .is_none());
    }

    #[test]
    fn a_client_is_answered_in_the_oldest_layer_at_or_above_its_own() {
        let layer = |l| Schema::for_layer(Some(l)).layer;
        assert_eq!(layer(100), 152);
        assert_eq!(layer(152), 152);
        assert_eq!(layer(153), 198);
        assert_eq!(layer(198), 198);
        assert_eq!(layer(199), 230);
        assert_eq!(layer(230), 230);
        assert_eq!(layer(231), 230);
        assert_eq!(Schema::for_layer(None).layer, 230);
    }
}
