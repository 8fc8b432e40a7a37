//! TL straight from a typed answer: a `serde::Serializer` driven by the schema, so an answer is
//! written as TL without first being built as a JSON tree ([`super::encode_result`]'s input).
//! It writes the same bytes `encode_result` writes for the answer's JSON (tested against it on
//! every answer the server's tests make, in debug builds), with the same rules: `"_"` names the
//! constructor, parameters are written in the schema's order whatever order the fields come in,
//! flags are computed from the conditional fields present, fields the client's layer lacks are
//! dropped and required ones left out are their type's zero.
//!
//! Why: building the JSON tree allocated a map node and a key string per field and a string per
//! text, for answers of hundreds of objects (getDialogs, getDifference). Here an object whose
//! fields come in the schema's order (a derived `Serialize` writes them in declaration order, and
//! the application declares them in the schema's) is written straight into its parent's buffer:
//! each parameter as its field arrives, the ones skipped as their zero or nothing, each `#` word
//! reserved and filled in at the object's end. Only the answer's own object, and every object
//! when one came out of order, goes through a scratch buffer and a pass over its parameters
//! (the answer is then written again that way). It is also a compact format
//! ([`Serializer::is_human_readable`] is false), so a type may write `bytes` as raw bytes where
//! JSON needs hex (`application::tl::Bytes`).
//!
//! An object whose fields come before its `"_"` (no derived `Serialize` does that) is collected
//! as JSON and written by the JSON encoder, so the result is the same either way.

use serde::ser::{self, Impossible, Serialize, Serializer};
use serde_json::{Map, Value};
use std::cell::RefCell;

use super::budget::MAX_DEPTH;
use super::json::{encode_value_at, encode_zero_at, result_type, unwrapped_for, TlJsonError};
use super::schema::{Combinator, ParamType, Schema};
use super::{Writer, VECTOR};

/// Writes a function's answer as the TL type `function` returns, straight from its `Serialize`:
/// the bytes [`super::encode_result`] writes for `serde_json::to_value(answer)`.
pub fn encode_result_typed<T: Serialize + ?Sized>(
    schema: &Schema,
    function: &str,
    answer: &T,
    w: &mut Writer,
) -> Result<(), TlJsonError> {
    let ty = result_type(schema, function);
    let start = w.buf.len();
    match write_answer(schema, &ty, answer, w, true) {
        Err(TlJsonError::OutOfOrder) => {
            w.buf.truncate(start);
            write_answer(schema, &ty, answer, w, false)
        }
        other => other,
    }
}

/// Whether `answer` is written in one pass, each object straight into its parent's buffer (no
/// field of any object out of the schema's order). Debug builds of the server check it on the
/// hot answers (`ONE_PASS_ANSWERS`), so their types keep their fields in the schema's order.
pub fn written_in_one_pass<T: Serialize + ?Sized>(
    schema: &Schema,
    function: &str,
    answer: &T,
) -> bool {
    let ty = result_type(schema, function);
    !matches!(
        write_answer(schema, &ty, answer, &mut Writer::new(), true),
        Err(TlJsonError::OutOfOrder)
    )
}

/// One attempt at [`encode_result_typed`]: with `direct`, objects write into their parents'
/// buffers and give up with [`TlJsonError::OutOfOrder`] on a field out of the schema's order.
fn write_answer<T: Serialize + ?Sized>(
    schema: &Schema,
    ty: &ParamType,
    answer: &T,
    w: &mut Writer,
    direct: bool,
) -> Result<(), TlJsonError> {
    let spare = Spare::default();
    let at = At {
        schema,
        ty,
        depth: 0,
        top: true,
        false_is_absent: false,
        direct,
        spare: &spare,
    };
    match answer.serialize(ValueSer { at, w })? {
        Wrote::Null => Err(wrong("an answer")),
        _ => Ok(()),
    }
}

impl ser::Error for TlJsonError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        TlJsonError::Unserializable(msg.to_string())
    }
}

fn wrong(what: &'static str) -> TlJsonError {
    TlJsonError::WrongValue("answer".to_string(), what)
}

/// What a value turned out to be, which decides whether a conditional field is present
/// (JSON's `null` and `false` are absent, except for a `flags.N?Bool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wrote {
    Value,
    False,
    Null,
}

/// Where a value is written: its schema, the type expected there and its depth.
#[derive(Clone, Copy)]
struct At<'s> {
    schema: &'s Schema,
    ty: &'s ParamType,
    depth: usize,
    /// The answer itself: an object of another type than the function's is unwrapped.
    top: bool,
    /// A conditional parameter other than `flags.N?Bool`, where `false` means absent (nothing
    /// written, whatever the type).
    false_is_absent: bool,
    /// Objects below the answer's may write straight into their parent's buffer.
    direct: bool,
    spare: &'s Spare,
}

/// The scratch buffers and slot vectors of finished objects, lent to the next ones: an answer of
/// hundreds of objects (a getDifference's messages, their peers and entities) then allocates as
/// many of each as its objects nest deep, not one per object. Only one answer's, so what it holds
/// is bounded by that answer's size.
#[derive(Default)]
struct Spare {
    bufs: RefCell<Vec<Vec<u8>>>,
    slots: RefCell<Vec<Vec<Slot>>>,
}

impl Spare {
    fn buf(&self) -> Vec<u8> {
        self.bufs
            .borrow_mut()
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(64))
    }

    fn slots(&self, n: usize) -> Vec<Slot> {
        let mut v = self.slots.borrow_mut().pop().unwrap_or_default();
        v.resize(n, Slot::default());
        v
    }

    fn give_back(&self, mut buf: Vec<u8>, mut slots: Vec<Slot>) {
        if buf.capacity() > 0 {
            buf.clear();
            self.bufs.borrow_mut().push(buf);
        }
        if slots.capacity() > 0 {
            slots.clear();
            self.slots.borrow_mut().push(slots);
        }
    }
}

impl<'s> At<'s> {
    /// `steps` deeper, as the JSON encoder counts: a vector's items one step, an object's
    /// fields two (the object, then its field).
    fn inner(self, ty: &'s ParamType, steps: usize) -> Result<Self, TlJsonError> {
        if self.depth + steps > MAX_DEPTH {
            return Err(TlJsonError::TooDeep);
        }
        Ok(At {
            schema: self.schema,
            ty,
            depth: self.depth + steps,
            top: false,
            false_is_absent: false,
            direct: self.direct,
            spare: self.spare,
        })
    }
}

/// One value of type `at.ty`, written to `w`.
struct ValueSer<'s, 'w> {
    at: At<'s>,
    w: &'w mut Writer,
}

impl<'s, 'w> ValueSer<'s, 'w> {
    fn int(self, n: i64) -> Result<Wrote, TlJsonError> {
        match self.at.ty {
            ParamType::Int => {
                self.w
                    .i32(i32::try_from(n).map_err(|_| wrong("int in range"))?);
            }
            ParamType::Long => {
                self.w.i64(n);
            }
            ParamType::Double => {
                self.w.f64(n as f64);
            }
            ParamType::String => {
                self.w.bytes(n.to_string().as_bytes());
            }
            ParamType::True => {}
            _ => return Err(wrong("a number where the schema has none")),
        }
        Ok(Wrote::Value)
    }

    fn text(self, s: &str) -> Result<Wrote, TlJsonError> {
        match self.at.ty {
            ParamType::Int | ParamType::Long => {
                let n: i64 = s.parse().map_err(|_| wrong("int or long"))?;
                return self.int(n);
            }
            ParamType::String => {
                self.w.bytes(s.as_bytes());
            }
            ParamType::Bytes => match hex::decode(s) {
                Ok(b) => {
                    self.w.bytes(&b);
                }
                Err(_) => {
                    self.w.bytes(s.as_bytes());
                }
            },
            ParamType::Int128 | ParamType::Int256 => {
                let b = hex::decode(s).map_err(|_| wrong("hex int128/int256"))?;
                return self.fixed(&b);
            }
            ParamType::True => {}
            _ => return Err(wrong("a string where the schema has none")),
        }
        Ok(Wrote::Value)
    }

    fn fixed(self, b: &[u8]) -> Result<Wrote, TlJsonError> {
        let len = if matches!(self.at.ty, ParamType::Int128) {
            16
        } else {
            32
        };
        if b.len() != len {
            return Err(wrong("hex int128/int256"));
        }
        self.w.raw(b);
        Ok(Wrote::Value)
    }

    fn object(self, fields: usize) -> Result<ObjectSer<'s, 'w>, TlJsonError> {
        let at = self.at;
        let kind = match at.ty {
            // At the top, an object where the function returns a vector: unwrapped, or refused
            // at its end (see `unwrap_param`).
            ParamType::Vector(_) if at.top => Kind::Boxed(None),
            ParamType::Generic | ParamType::Boxed(_) => {
                if at.depth + 1 > MAX_DEPTH {
                    return Err(TlJsonError::TooDeep);
                }
                Kind::Boxed(None)
            }
            ParamType::Bare(name) => Kind::Bare(
                at.schema
                    .by_name(name)
                    .ok_or_else(|| TlJsonError::UnknownConstructor(name.clone()))?,
            ),
            ParamType::String => Kind::TextOf { text: None },
            ParamType::Bool => Kind::BoolObject(false),
            ParamType::True => Kind::Ignored,
            ParamType::Vector(_) | ParamType::BareVector(_) => return Err(wrong("array")),
            _ => return Err(wrong("a value, not an object")),
        };
        let mut o = ObjectSer {
            at,
            w: self.w,
            kind,
            scratch: None,
            direct: None,
            next_param: 0,
            json: None,
            json_capacity: fields,
            key: String::new(),
        };
        if let Kind::Bare(c) = o.kind {
            o.start(c);
        }
        Ok(o)
    }
}

impl<'s, 'w> Serializer for ValueSer<'s, 'w> {
    type Ok = Wrote;
    type Error = TlJsonError;
    type SerializeSeq = SeqSer<'s, 'w>;
    type SerializeTuple = SeqSer<'s, 'w>;
    type SerializeTupleStruct = SeqSer<'s, 'w>;
    type SerializeTupleVariant = Impossible<Wrote, TlJsonError>;
    type SerializeMap = ObjectSer<'s, 'w>;
    type SerializeStruct = ObjectSer<'s, 'w>;
    type SerializeStructVariant = Impossible<Wrote, TlJsonError>;

    fn is_human_readable(&self) -> bool {
        false
    }

    fn serialize_bool(self, v: bool) -> Result<Wrote, TlJsonError> {
        if !v && self.at.false_is_absent {
            return Ok(Wrote::False);
        }
        match self.at.ty {
            ParamType::Bool => {
                self.w.bool(v);
            }
            ParamType::Int | ParamType::Long => {
                self.int(i64::from(v))?;
            }
            ParamType::True => {}
            _ => return Err(wrong("a boolean where the schema has none")),
        }
        Ok(if v { Wrote::Value } else { Wrote::False })
    }

    fn serialize_i8(self, v: i8) -> Result<Wrote, TlJsonError> {
        self.int(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<Wrote, TlJsonError> {
        self.int(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<Wrote, TlJsonError> {
        self.int(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<Wrote, TlJsonError> {
        self.int(v)
    }
    fn serialize_u8(self, v: u8) -> Result<Wrote, TlJsonError> {
        self.int(i64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<Wrote, TlJsonError> {
        self.int(i64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<Wrote, TlJsonError> {
        self.int(i64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<Wrote, TlJsonError> {
        // As the JSON encoder reads a number past i64: its bits.
        self.int(v as i64)
    }

    fn serialize_f32(self, v: f32) -> Result<Wrote, TlJsonError> {
        self.serialize_f64(f64::from(v))
    }
    fn serialize_f64(self, v: f64) -> Result<Wrote, TlJsonError> {
        match self.at.ty {
            ParamType::Double => {
                self.w.f64(v);
            }
            ParamType::True => {}
            _ => return Err(wrong("a double where the schema has none")),
        }
        Ok(Wrote::Value)
    }

    fn serialize_char(self, v: char) -> Result<Wrote, TlJsonError> {
        self.text(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<Wrote, TlJsonError> {
        self.text(v)
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<Wrote, TlJsonError> {
        match self.at.ty {
            ParamType::Bytes | ParamType::String => {
                self.w.bytes(v);
            }
            ParamType::Int128 | ParamType::Int256 => return self.fixed(v),
            ParamType::True => {}
            _ => return Err(wrong("bytes where the schema has none")),
        }
        Ok(Wrote::Value)
    }

    fn serialize_none(self) -> Result<Wrote, TlJsonError> {
        Ok(Wrote::Null)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<Wrote, TlJsonError> {
        v.serialize(self)
    }
    fn serialize_unit(self) -> Result<Wrote, TlJsonError> {
        Ok(Wrote::Null)
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<Wrote, TlJsonError> {
        Ok(Wrote::Null)
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Wrote, TlJsonError> {
        self.text(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<Wrote, TlJsonError> {
        v.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<Wrote, TlJsonError> {
        // JSON writes `{variant: value}`.
        let mut o = self.object(1)?;
        ser::SerializeStruct::serialize_field(&mut o, variant, v)?;
        ser::SerializeStruct::end(o)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<SeqSer<'s, 'w>, TlJsonError> {
        let (boxed, inner) = match self.at.ty {
            ParamType::Vector(inner) => (true, &**inner),
            ParamType::BareVector(inner) => (false, &**inner),
            _ => return Err(wrong("an array where the schema has none")),
        };
        if boxed {
            self.w.u32(VECTOR);
        }
        let count_at = self.w.buf.len();
        self.w.i32(0);
        Ok(SeqSer {
            at: self.at.inner(inner, 1)?,
            w: self.w,
            count_at,
            count: 0,
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<SeqSer<'s, 'w>, TlJsonError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<SeqSer<'s, 'w>, TlJsonError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, TlJsonError> {
        Err(wrong("no tuple variants in TL"))
    }
    fn serialize_map(self, len: Option<usize>) -> Result<ObjectSer<'s, 'w>, TlJsonError> {
        self.object(len.unwrap_or(0))
    }
    fn serialize_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<ObjectSer<'s, 'w>, TlJsonError> {
        self.object(len)
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, TlJsonError> {
        Err(wrong(
            "no struct variants in TL (name the constructor with \"_\")",
        ))
    }
}

/// A `Vector` / `vector`: its items, and the count written over its place at the end.
struct SeqSer<'s, 'w> {
    at: At<'s>,
    w: &'w mut Writer,
    count_at: usize,
    count: i32,
}

impl SeqSer<'_, '_> {
    fn item<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), TlJsonError> {
        if v.serialize(ValueSer {
            at: self.at,
            w: &mut *self.w,
        })? == Wrote::Null
        {
            return Err(wrong("an item, not null"));
        }
        self.count += 1;
        Ok(())
    }

    fn finish(self) -> Result<Wrote, TlJsonError> {
        self.w.buf[self.count_at..self.count_at + 4].copy_from_slice(&self.count.to_le_bytes());
        Ok(Wrote::Value)
    }
}

impl ser::SerializeSeq for SeqSer<'_, '_> {
    type Ok = Wrote;
    type Error = TlJsonError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), TlJsonError> {
        self.item(v)
    }
    fn end(self) -> Result<Wrote, TlJsonError> {
        self.finish()
    }
}

impl ser::SerializeTuple for SeqSer<'_, '_> {
    type Ok = Wrote;
    type Error = TlJsonError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), TlJsonError> {
        self.item(v)
    }
    fn end(self) -> Result<Wrote, TlJsonError> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for SeqSer<'_, '_> {
    type Ok = Wrote;
    type Error = TlJsonError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), TlJsonError> {
        self.item(v)
    }
    fn end(self) -> Result<Wrote, TlJsonError> {
        self.finish()
    }
}

/// What an object is where it is written.
enum Kind<'s> {
    /// A boxed object: its constructor, once `"_"` has named it.
    Boxed(Option<&'s Combinator>),
    /// A bare constructor (no id written).
    Bare(&'s Combinator),
    /// A `textWithEntities` where an older layer has a `string`: its text.
    TextOf { text: Option<Vec<u8>> },
    /// `{"_": "boolTrue"}` where the schema has `Bool`.
    BoolObject(bool),
    /// Where the schema has `true`: nothing is written.
    Ignored,
}

/// One parameter's value as written into the object's scratch buffer.
#[derive(Clone, Copy, Default)]
struct Slot {
    start: usize,
    end: usize,
    present: bool,
    /// Written and not null: a required parameter is not zero-filled.
    given: bool,
    /// Of a `#` parameter: the bits of its present conditional parameters.
    bits: u32,
}

/// An object's fields: each written into a scratch buffer as it comes, then the parameters
/// copied out in the schema's order with the flags computed.
struct ObjectSer<'s, 'w> {
    at: At<'s>,
    w: &'w mut Writer,
    kind: Kind<'s>,
    /// Written through a scratch buffer (boxed: it is the rarer case, and serde moves this
    /// struct by value for every object).
    scratch: Option<Box<Scratch>>,
    /// Written straight into `w` instead.
    direct: Option<Direct>,
    /// Where the search for the next field's parameter starts: fields mostly come in the
    /// schema's order, so the parameter is usually the next one.
    next_param: usize,
    /// The fields, as JSON, of an object whose fields came before its `"_"`.
    json: Option<Box<Map<String, Value>>>,
    json_capacity: usize,
    /// A map's key between `serialize_key` and `serialize_value`.
    key: String,
}

/// The `#` words a constructor may have (two at most in every layer we serve); an object with
/// more is written through the scratch buffer.
const MAX_FLAG_WORDS: usize = 4;

/// An object being written straight into its parent's buffer (kept small: see `scratch`).
#[derive(Default)]
struct Direct {
    /// Its parameters before this one are written (or were absent).
    emitted: u32,
    /// Its `#` words so far: the parameter, where its four bytes are reserved, its bits.
    word_param: [u16; MAX_FLAG_WORDS],
    word_at: [usize; MAX_FLAG_WORDS],
    word_bits: [u32; MAX_FLAG_WORDS],
    words: u8,
}

/// An object being written through a scratch buffer: each field's bytes as it comes, then the
/// parameters copied out in the schema's order at its end.
struct Scratch {
    buf: Writer,
    /// One per parameter of the constructor.
    slots: Vec<Slot>,
    /// At the top of an answer of another type than the function's: the one parameter of the
    /// function's type, and its value as that type once written.
    unwrap: Option<(usize, Option<Writer>)>,
}

impl Drop for ObjectSer<'_, '_> {
    fn drop(&mut self) {
        if let Some(scratch) = self.scratch.take() {
            let Scratch { buf, slots, .. } = *scratch;
            self.at.spare.give_back(buf.buf, slots);
        }
    }
}

impl<'s> ObjectSer<'s, '_> {
    /// Once per object, when its constructor is known: straight into the parent's buffer (its
    /// id first, when boxed), or, at the top of the answer, through a scratch buffer.
    fn start(&mut self, c: &'s Combinator) {
        if self.at.direct && !self.at.top {
            if matches!(self.kind, Kind::Boxed(_)) {
                self.w.u32(c.id);
            }
            self.direct = Some(Direct::default());
            return;
        }
        self.scratch = Some(Box::new(Scratch {
            buf: Writer {
                buf: self.at.spare.buf(),
            },
            slots: self.at.spare.slots(c.params.len()),
            unwrap: if self.at.top {
                unwrap_param(self.at.ty, c).map(|i| (i, None))
            } else {
                None
            },
        }));
    }

    /// Writes parameters `emitted..upto` as absent: a `#` word reserved, a conditional nothing,
    /// a required one its type's zero.
    fn skip_to(&mut self, c: &Combinator, upto: usize) -> Result<(), TlJsonError> {
        let Some(d) = self.direct.as_mut() else {
            return Ok(());
        };
        // Absent conditional parameters write nothing: only the others are visited.
        let mut i = c.next_written[(d.emitted as usize).min(c.params.len())];
        while i < upto {
            let p = &c.params[i];
            match &p.ty {
                ParamType::Flags => {
                    let n = usize::from(d.words);
                    if n == MAX_FLAG_WORDS {
                        return Err(TlJsonError::OutOfOrder);
                    }
                    d.word_param[n] = i as u16;
                    d.word_at[n] = self.w.buf.len();
                    d.word_bits[n] = 0;
                    d.words += 1;
                    self.w.u32(0);
                }
                // Never visited: `next_written` jumps over them.
                ParamType::Conditional { .. } => {}
                // A required object has no zero: it may still come, out of order, so the
                // scratch pass decides.
                ty => encode_zero_at(ty, self.w, &c.name, &p.name)
                    .map_err(|_| TlJsonError::OutOfOrder)?,
            }
            i = c.next_written[i + 1];
        }
        d.emitted = d.emitted.max(upto as u32);
        Ok(())
    }

    /// A field written straight into the parent's buffer, after the parameters it skipped.
    fn field_direct<T: Serialize + ?Sized>(
        &mut self,
        c: &Combinator,
        i: usize,
        v: &T,
    ) -> Result<(), TlJsonError> {
        if self.direct.as_ref().is_some_and(|d| i < d.emitted as usize) {
            return Err(TlJsonError::OutOfOrder);
        }
        let (ty, bit) = match &c.params[i].ty {
            // Computed from the conditional fields, whatever the object says.
            ParamType::Flags => return Ok(()),
            ParamType::Conditional { inner, bit, .. } => (&**inner, Some(*bit)),
            ty => (ty, None),
        };
        self.skip_to(c, i)?;
        let start = self.w.buf.len();
        let at = At {
            false_is_absent: bit.is_some() && !matches!(ty, ParamType::Bool),
            ..self.at.inner(ty, 2)?
        };
        let wrote = v.serialize(ValueSer {
            at,
            w: &mut *self.w,
        })?;
        let present = match wrote {
            Wrote::Null => false,
            Wrote::False => bit.is_none() || matches!(ty, ParamType::Bool),
            Wrote::Value => true,
        };
        if !present {
            self.w.buf.truncate(start);
            if bit.is_none() {
                encode_zero_at(ty, self.w, &c.name, &c.params[i].name)?;
            }
        }
        let Some(d) = self.direct.as_mut() else {
            return Ok(());
        };
        if let (true, Some(bit), Some(f)) = (present, bit, c.flag_of[i]) {
            // A `#` word comes before the parameters it flags, so it is reserved by now.
            let n = d.word_param[..usize::from(d.words)]
                .iter()
                .position(|&p| usize::from(p) == f)
                .ok_or(TlJsonError::OutOfOrder)?;
            d.word_bits[n] |= 1 << bit;
        }
        d.emitted = i as u32 + 1;
        Ok(())
    }

    /// The end of an object written straight into the parent's buffer: the parameters after the
    /// last field, then its `#` words filled in.
    fn finish_direct(&mut self, c: &Combinator) -> Result<Wrote, TlJsonError> {
        self.skip_to(c, c.params.len())?;
        if let Some(d) = &self.direct {
            let n = usize::from(d.words);
            for (&at, bits) in d.word_at[..n].iter().zip(&d.word_bits[..n]) {
                self.w.buf[at..at + 4].copy_from_slice(&bits.to_le_bytes());
            }
        }
        Ok(Wrote::Value)
    }

    fn field<T: Serialize + ?Sized>(&mut self, name: &str, v: &T) -> Result<(), TlJsonError> {
        if let Some(json) = self.json.as_mut() {
            json.insert(name.to_string(), to_json(v)?);
            return Ok(());
        }
        let c = match &mut self.kind {
            Kind::Ignored => return Ok(()),
            Kind::BoolObject(b) => {
                if name == "_" {
                    *b = with_name(v, |n| n == "boolTrue")? == Some(true);
                }
                return Ok(());
            }
            Kind::TextOf { text } => {
                match name {
                    "_" if with_name(v, |n| n == "textWithEntities")? != Some(true) => {
                        return Err(wrong("string"))
                    }
                    "text" => {
                        let mut w = Writer::new();
                        let at = At {
                            ty: &ParamType::String,
                            ..self.at
                        };
                        v.serialize(ValueSer { at, w: &mut w })?;
                        *text = Some(w.buf);
                    }
                    _ => {}
                }
                return Ok(());
            }
            Kind::Bare(c) => *c,
            Kind::Boxed(Some(c)) => *c,
            Kind::Boxed(None) if name == "_" => {
                let schema = self.at.schema;
                let c = with_name(v, |n| schema.by_name(n).ok_or_else(|| n.to_string()))?
                    .ok_or_else(|| wrong("a constructor name"))?
                    .map_err(TlJsonError::UnknownConstructor)?;
                self.kind = Kind::Boxed(Some(c));
                self.start(c);
                return Ok(());
            }
            Kind::Boxed(None) => {
                // A field before `"_"`: the JSON encoder writes this one.
                let mut json = Map::with_capacity(self.json_capacity);
                json.insert(name.to_string(), to_json(v)?);
                self.json = Some(Box::new(json));
                return Ok(());
            }
        };
        let (before, after) = c.params.split_at(self.next_param.min(c.params.len()));
        let found = match after.iter().position(|p| p.name == name) {
            Some(i) => Some(before.len() + i),
            None => before.iter().position(|p| p.name == name),
        };
        let Some(i) = found else {
            // Not in this layer (or `"_"` of a bare object): dropped.
            return Ok(());
        };
        self.next_param = i + 1;
        if self.direct.is_some() {
            return self.field_direct(c, i, v);
        }
        let Some(scratch) = self.scratch.as_deref_mut() else {
            return Err(wrong("an object with \"_\""));
        };
        if let Some((u, got)) = &mut scratch.unwrap {
            if *u == i {
                let mut w = Writer::new();
                let wrote = v.serialize(ValueSer {
                    at: At {
                        top: false,
                        false_is_absent: false,
                        ..self.at
                    },
                    w: &mut w,
                })?;
                if wrote == Wrote::Null {
                    return Err(wrong("the answer's one field of the function's type"));
                }
                *got = Some(w);
            }
        }
        let (ty, conditional) = match &c.params[i].ty {
            ParamType::Flags => return Ok(()),
            ParamType::Conditional { inner, .. } => (&**inner, true),
            ty => (ty, false),
        };
        let start = scratch.buf.buf.len();
        let at = At {
            false_is_absent: conditional && !matches!(ty, ParamType::Bool),
            ..self.at.inner(ty, 2)?
        };
        let wrote = v.serialize(ValueSer {
            at,
            w: &mut scratch.buf,
        })?;
        let present = match wrote {
            Wrote::Null => false,
            Wrote::False => !conditional || matches!(ty, ParamType::Bool),
            Wrote::Value => true,
        };
        if !present {
            scratch.buf.buf.truncate(start);
        }
        scratch.slots[i] = Slot {
            start,
            end: scratch.buf.buf.len(),
            present,
            given: wrote != Wrote::Null,
            bits: 0,
        };
        Ok(())
    }

    fn finish(mut self) -> Result<Wrote, TlJsonError> {
        if let Some(json) = self.json.take() {
            return self.finish_as_json(Value::Object(*json));
        }
        let c = match std::mem::replace(&mut self.kind, Kind::Ignored) {
            Kind::Ignored => return Ok(Wrote::Value),
            Kind::BoolObject(b) => {
                self.w.bool(b);
                return Ok(Wrote::Value);
            }
            Kind::TextOf { text } => {
                match text {
                    Some(t) => self.w.raw(&t),
                    None => self.w.bytes(&[]),
                };
                return Ok(Wrote::Value);
            }
            Kind::Boxed(None) => return Err(wrong("an object with \"_\"")),
            Kind::Boxed(Some(c)) | Kind::Bare(c) if self.direct.is_some() => {
                return self.finish_direct(c)
            }
            Kind::Boxed(Some(c)) => {
                if let Some((_, Some(got))) = self.scratch.as_mut().and_then(|s| s.unwrap.take()) {
                    self.w.raw(&got.buf);
                    return Ok(Wrote::Value);
                }
                if self.at.top && matches!(self.at.ty, ParamType::Vector(_)) {
                    return Err(wrong("array"));
                }
                self.w.u32(c.id);
                c
            }
            Kind::Bare(c) => c,
        };
        let Some(scratch) = self.scratch.as_deref_mut() else {
            return Err(wrong("an object with \"_\""));
        };
        for (i, (p, flag)) in c.params.iter().zip(&c.flag_of).enumerate() {
            if let (Some(f), ParamType::Conditional { bit, .. }) = (flag, &p.ty) {
                if scratch.slots[i].present {
                    scratch.slots[*f].bits |= 1 << bit;
                }
            }
        }
        for (i, p) in c.params.iter().enumerate() {
            let slot = scratch.slots[i];
            match &p.ty {
                ParamType::Flags => {
                    self.w.u32(slot.bits);
                }
                ParamType::Conditional { inner, .. } => {
                    if slot.present && !matches!(**inner, ParamType::True) {
                        self.w.raw(&scratch.buf.buf[slot.start..slot.end]);
                    }
                }
                ty => {
                    if slot.given {
                        self.w.raw(&scratch.buf.buf[slot.start..slot.end]);
                    } else {
                        encode_zero_at(ty, self.w, &c.name, &p.name)?;
                    }
                }
            }
        }
        Ok(Wrote::Value)
    }

    /// The object as the JSON encoder writes it.
    fn finish_as_json(&mut self, v: Value) -> Result<Wrote, TlJsonError> {
        let v = if self.at.top {
            unwrapped_for(self.at.schema, self.at.ty, &v)
        } else {
            &v
        };
        encode_value_at(self.at.schema, self.at.ty, v, self.w, self.at.depth)?;
        Ok(Wrote::Value)
    }
}

/// The index of `c`'s one parameter of type `ty`, when an object of `c` answers a function
/// returning another type (see [`unwrapped_for`]).
fn unwrap_param(ty: &ParamType, c: &Combinator) -> Option<usize> {
    let other_type = match ty {
        ParamType::Vector(_) => true,
        ParamType::Boxed(t) => c.result != *t,
        _ => false,
    };
    if !other_type {
        return None;
    }
    let unconditional = |p: &ParamType| match p {
        ParamType::Conditional { inner, .. } => &**inner == ty,
        p => p == ty,
    };
    let mut of_type = c
        .params
        .iter()
        .enumerate()
        .filter(|(_, p)| unconditional(&p.ty));
    match (of_type.next(), of_type.next()) {
        (Some((i, _)), None) => Some(i),
        _ => None,
    }
}

fn to_json<T: Serialize + ?Sized>(v: &T) -> Result<Value, TlJsonError> {
    serde_json::to_value(v).map_err(|e| TlJsonError::Unserializable(e.to_string()))
}

/// What `f` makes of the string a `"_"` field holds (`None` when it holds something else),
/// read without copying it.
fn with_name<T: Serialize + ?Sized, R>(
    v: &T,
    f: impl FnOnce(&str) -> R,
) -> Result<Option<R>, TlJsonError> {
    v.serialize(NameSer(f))
}

/// Reads a string (and nothing else: anything else is `None`).
struct NameSer<F>(F);

macro_rules! not_a_name {
    ($($method:ident($($t:ty),*);)*) => {$(
        fn $method(self, $(_: $t),*) -> Result<Self::Ok, TlJsonError> {
            Ok(None)
        }
    )*};
}

impl<R, F: FnOnce(&str) -> R> Serializer for NameSer<F> {
    type Ok = Option<R>;
    type Error = TlJsonError;
    type SerializeSeq = Impossible<Option<R>, TlJsonError>;
    type SerializeTuple = Impossible<Option<R>, TlJsonError>;
    type SerializeTupleStruct = Impossible<Option<R>, TlJsonError>;
    type SerializeTupleVariant = Impossible<Option<R>, TlJsonError>;
    type SerializeMap = Impossible<Option<R>, TlJsonError>;
    type SerializeStruct = Impossible<Option<R>, TlJsonError>;
    type SerializeStructVariant = Impossible<Option<R>, TlJsonError>;

    fn serialize_str(self, v: &str) -> Result<Option<R>, TlJsonError> {
        Ok(Some((self.0)(v)))
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        v: &'static str,
    ) -> Result<Option<R>, TlJsonError> {
        Ok(Some((self.0)(v)))
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<Option<R>, TlJsonError> {
        v.serialize(self)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<Option<R>, TlJsonError> {
        v.serialize(self)
    }
    not_a_name! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
        serialize_u64(u64); serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_bytes(&[u8]); serialize_none(); serialize_unit();
        serialize_unit_struct(&'static str);
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Option<R>, TlJsonError> {
        Ok(None)
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, TlJsonError> {
        Err(wrong("a constructor name"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, TlJsonError> {
        Err(wrong("a constructor name"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, TlJsonError> {
        Err(wrong("a constructor name"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, TlJsonError> {
        Err(wrong("a constructor name"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, TlJsonError> {
        Err(wrong("a constructor name"))
    }
    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, TlJsonError> {
        Err(wrong("a constructor name"))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, TlJsonError> {
        Err(wrong("a constructor name"))
    }
}

impl ser::SerializeStruct for ObjectSer<'_, '_> {
    type Ok = Wrote;
    type Error = TlJsonError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        name: &'static str,
        v: &T,
    ) -> Result<(), TlJsonError> {
        self.field(name, v)
    }
    fn end(self) -> Result<Wrote, TlJsonError> {
        self.finish()
    }
}

impl ser::SerializeMap for ObjectSer<'_, '_> {
    type Ok = Wrote;
    type Error = TlJsonError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), TlJsonError> {
        self.key = match to_json(k)? {
            Value::String(s) => s,
            _ => return Err(wrong("a string key")),
        };
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), TlJsonError> {
        let key = std::mem::take(&mut self.key);
        self.field(&key, v)
    }
    fn end(self) -> Result<Wrote, TlJsonError> {
        self.finish()
    }
}

#[cfg(test)]
mod tests {
    use serde::Serialize;
    use serde_json::{json, Value};

    use super::*;
    use crate::tl::{encode_result, LAYERS};

    /// Both encoders' results for `answer` in every layer: the same bytes, or both refuse.
    fn same_in_every_layer<T: Serialize>(function: &str, answer: &T) -> Vec<u8> {
        let json = serde_json::to_value(answer).unwrap();
        let mut newest = Vec::new();
        for (layer, _) in LAYERS {
            let schema = Schema::layer(*layer).unwrap();
            let (mut a, mut b, mut c) = (Writer::new(), Writer::new(), Writer::new());
            let by_json = encode_result(schema, function, &json, &mut a);
            let typed = encode_result_typed(schema, function, answer, &mut b);
            // And through the scratch buffers only, as when a field comes out of order.
            let ty = result_type(schema, function);
            let scratch = write_answer(schema, &ty, answer, &mut c, false);
            assert_eq!(
                (by_json.is_ok(), scratch.is_ok()),
                (typed.is_ok(), typed.is_ok()),
                "layer {layer}, {function}: {by_json:?} vs {typed:?} vs {scratch:?}"
            );
            if typed.is_ok() {
                assert_eq!(a.buf, b.buf, "layer {layer}, {function}");
                assert_eq!(a.buf, c.buf, "layer {layer}, {function}, scratch");
            }
            newest = b.buf;
        }
        newest
    }

    #[test]
    fn json_answers_encode_as_the_json_encoder_writes_them() {
        let user = json!({"_": "user", "self": true, "id": 5, "access_hash": -9,
            "first_name": "A", "phone": "1555", "profile_color": {"_": "peerColor", "color": 3},
            "color": {"_": "peerColor", "color": 1}, "status": {"_": "userStatusRecently"},
            "not_a_field": [1, 2]});
        same_in_every_layer("users.getUsers", &json!([user.clone(), user]));
        let filters = json!({"_": "messages.dialogFilters", "tags_enabled": true, "filters": [
            {"_": "dialogFilterDefault"},
            {"_": "dialogFilter", "id": 2, "contacts": false,
             "title": {"_": "textWithEntities", "text": "Work", "entities": []},
             "pinned_peers": [], "include_peers": [{"_": "inputPeerSelf"}], "exclude_peers": []}]});
        same_in_every_layer("messages.getDialogFilters", &filters);
        let config = json!({"_": "help.appConfig", "hash": 5,
            "config": {"_": "jsonObject", "value": [
                {"_": "jsonObjectValue", "key": "k", "value": {"_": "jsonNumber", "value": 1.5}}]}});
        same_in_every_layer("help.getAppConfig", &config);
        same_in_every_layer("help.getConfig", &json!({"_": "config", "this_dc": 2}));
        same_in_every_layer(
            "updates.getDifference",
            &json!({"_": "updates.differenceEmpty"}),
        );
        same_in_every_layer("contacts.block", &json!({"_": "boolTrue"}));
        same_in_every_layer("contacts.block", &json!({"_": "boolFalse"}));
        // Longs as strings, bytes as hex, a conditional Bool that is false (present).
        same_in_every_layer(
            "upload.getFile",
            &json!({"_": "upload.file", "type": {"_": "storage.fileJpeg"}, "mtime": 7,
                "bytes": "00ff10"}),
        );
        same_in_every_layer(
            "messages.getPeerSettings",
            &json!({"_": "messages.peerSettings",
                "settings": {"_": "peerSettings", "report_spam": false, "add_contact": true},
                "chats": [], "users": []}),
        );
    }

    #[test]
    fn refusals_agree() {
        // A missing required object, an unknown constructor, an object where a vector goes, a
        // number out of an int's range.
        for (function, answer) in [
            ("updates.getDifference", json!({"_": "updates.difference"})),
            ("messages.getDialogs", json!({"_": "messages.noSuchThing"})),
            ("users.getUsers", json!({"_": "userEmpty", "id": 1})),
            (
                "messages.deleteMessages",
                json!({"_": "messages.affectedMessages", "pts": 1u64 << 40, "pts_count": 1}),
            ),
            ("users.getUsers", json!([null])),
            ("help.getConfig", json!({"this_dc": 2})),
        ] {
            let mut w = Writer::new();
            let e = encode_result_typed(Schema::api(), function, &answer, &mut w);
            assert!(e.is_err(), "{function}: {answer}");
            same_in_every_layer(function, &answer);
        }
    }

    #[derive(Serialize)]
    #[serde(tag = "_", rename = "peerUser")]
    struct PeerUser {
        user_id: i64,
    }

    /// `message` with its fields in another order than the schema's, some absent.
    #[derive(Serialize)]
    #[serde(tag = "_", rename = "message")]
    struct Message {
        message: String,
        date: i32,
        id: i32,
        out: bool,
        mentioned: bool,
        #[serde(skip_serializing_if = "Option::is_none")]
        from_id: Option<PeerUser>,
        peer_id: PeerUser,
        edit_date: Option<i32>,
        #[serde(skip_serializing_if = "Vec::is_empty")]
        entities: Vec<Value>,
    }

    #[derive(Serialize)]
    #[serde(tag = "_")]
    enum Messages {
        #[serde(rename = "messages.messages")]
        All {
            messages: Vec<Message>,
            chats: Vec<Value>,
            users: Vec<Value>,
        },
    }

    fn message(id: i32) -> Message {
        Message {
            message: format!("hello {id} — ünïcode"),
            date: 1_700_000_000 + id,
            id,
            out: id % 2 == 0,
            mentioned: false,
            from_id: (id % 3 == 0).then_some(PeerUser { user_id: 7 }),
            peer_id: PeerUser { user_id: 1 << 40 },
            edit_date: (id % 5 == 0).then_some(9),
            entities: if id == 4 {
                vec![json!({"_": "messageEntityBold", "offset": 0, "length": 5})]
            } else {
                vec![]
            },
        }
    }

    #[test]
    fn derived_answers_encode_as_their_json_does() {
        let answer = Messages::All {
            messages: (1..=12).map(message).collect(),
            chats: vec![],
            users: vec![json!({"_": "user", "id": 7, "first_name": "S", "bot": false})],
        };
        let bytes = same_in_every_layer("messages.getHistory", &answer);
        let mut r = crate::tl::Reader::new(&bytes);
        let back = crate::tl::decode_object(Schema::api(), &mut r).unwrap();
        assert_eq!(back["messages"][3]["entities"][0]["length"], 5);
        assert_eq!(back["messages"][2]["from_id"]["user_id"], 7);
        assert_eq!(back["messages"][1]["out"], true);
        assert_eq!(back["messages"][4]["edit_date"], 9);
        assert!(back["messages"][0].get("edit_date").is_none());
        // Out of order, so written again through the scratch buffers.
        assert!(!written_in_one_pass(
            Schema::api(),
            "messages.getHistory",
            &answer
        ));
    }

    /// `message` in the schema's order: written straight through, with the same bytes.
    #[derive(Serialize)]
    #[serde(tag = "_", rename = "message")]
    struct InOrder {
        out: bool,
        id: i32,
        #[serde(skip_serializing_if = "Option::is_none")]
        from_id: Option<PeerUser>,
        peer_id: PeerUser,
        date: i32,
        message: String,
        entities: Vec<Bold>,
        edit_date: Option<i32>,
        /// Not in any layer: dropped.
        not_a_field: i32,
    }

    #[derive(Serialize)]
    #[serde(tag = "_", rename = "messageEntityBold")]
    struct Bold {
        offset: i32,
        length: i32,
    }

    #[test]
    fn objects_in_the_schema_s_order_are_written_in_one_pass() {
        let messages: Vec<InOrder> = (1..=6)
            .map(|id| InOrder {
                out: id % 2 == 0,
                id,
                from_id: (id % 3 == 0).then_some(PeerUser { user_id: 7 }),
                peer_id: PeerUser { user_id: 1 << 40 },
                date: 1_700_000_000 + id,
                message: format!("hello {id}"),
                entities: vec![Bold {
                    offset: 0,
                    length: id,
                }],
                edit_date: (id % 2 == 1).then_some(9),
                not_a_field: 1,
            })
            .collect();
        let answer = json!({"_": "messages.messages", "messages": messages, "chats": [],
            "users": []});
        // The JSON map's keys come sorted: the answer's own object is out of order (it is
        // written through a scratch buffer anyway), and so are the messages' JSON twins.
        assert!(!written_in_one_pass(
            Schema::api(),
            "messages.getHistory",
            &answer
        ));
        #[derive(Serialize)]
        #[serde(tag = "_", rename = "messages.messages")]
        struct Typed {
            messages: Vec<InOrder>,
            chats: Vec<Value>,
            users: Vec<Value>,
        }
        let typed = Typed {
            messages,
            chats: vec![],
            users: vec![],
        };
        let bytes = same_in_every_layer("messages.getHistory", &typed);
        for (layer, _) in LAYERS {
            let schema = Schema::layer(*layer).unwrap();
            assert!(
                written_in_one_pass(schema, "messages.getHistory", &typed),
                "layer {layer}"
            );
        }
        let back =
            crate::tl::decode_object(Schema::api(), &mut crate::tl::Reader::new(&bytes)).unwrap();
        assert_eq!(back["messages"][2]["from_id"]["user_id"], 7);
        assert_eq!(back["messages"][1]["out"], true);
        assert_eq!(back["messages"][0]["edit_date"], 9);
        assert!(back["messages"][1].get("edit_date").is_none());
        assert_eq!(back["messages"][5]["entities"][0]["length"], 6);
    }

    #[derive(Serialize)]
    #[serde(tag = "_", rename = "holder")]
    struct Holder<T> {
        inner: T,
    }

    /// Four `#` words, each flagging one field.
    #[derive(Serialize)]
    #[serde(tag = "_", rename = "four")]
    struct Four {
        a: Option<i32>,
        b: Option<i32>,
        c: Option<i32>,
        d: Option<i32>,
    }

    /// Five.
    #[derive(Serialize)]
    #[serde(tag = "_", rename = "five")]
    struct Five {
        a: Option<i32>,
        e: Option<i32>,
    }

    #[test]
    fn an_object_with_more_flag_words_than_it_reserves_goes_through_the_scratch_buffer() {
        let schema = Schema::parse(
            "four#10 f1:# f2:# f3:# f4:# a:f1.0?int b:f2.1?int c:f3.2?int d:f4.3?int = Many;\n\
             five#11 f1:# f2:# f3:# f4:# f5:# a:f1.0?int e:f5.4?int = Many;\n\
             holder#12 inner:Many = Holder;\n\
             ---functions---\n\
             getHolder#13 = Holder;",
        );
        let write = |answer: &dyn erased::Answer| {
            let (mut typed, mut json) = (Writer::new(), Writer::new());
            answer.typed(&schema, &mut typed);
            encode_result(&schema, "getHolder", &answer.json(), &mut json).unwrap();
            assert_eq!(typed.buf, json.buf);
            typed.buf
        };
        let four = Holder {
            inner: Four {
                a: Some(1),
                b: None,
                c: Some(3),
                d: Some(4),
            },
        };
        assert_eq!(MAX_FLAG_WORDS, 4);
        assert!(written_in_one_pass(&schema, "getHolder", &four));
        let bytes = write(&four);
        // holder's id, four's id, the words 1, 0, 4 and 8, then a, c and d.
        assert_eq!(bytes.len(), 4 + 4 + 4 * 4 + 3 * 4);
        assert_eq!(
            bytes[8..24],
            [1, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 8, 0, 0, 0]
        );
        let five = Holder {
            inner: Five {
                a: Some(1),
                e: Some(5),
            },
        };
        assert!(!written_in_one_pass(&schema, "getHolder", &five));
        write(&five);
    }

    /// A typed answer and its JSON, behind one object-safe face for the test above.
    mod erased {
        use super::*;

        pub trait Answer {
            fn typed(&self, schema: &Schema, w: &mut Writer);
            fn json(&self) -> Value;
        }

        impl<T: Serialize> Answer for T {
            fn typed(&self, schema: &Schema, w: &mut Writer) {
                encode_result_typed(schema, "getHolder", self, w).unwrap();
            }
            fn json(&self) -> Value {
                serde_json::to_value(self).unwrap()
            }
        }
    }

    /// Its `"_"` last: written through the JSON encoder, with the same bytes.
    #[derive(Serialize)]
    struct NameLast {
        user_id: i64,
        #[serde(rename = "_")]
        name: &'static str,
    }

    #[test]
    fn an_object_named_after_its_fields_is_written_as_its_json() {
        let answer = json!({"_": "updates.differenceEmpty", "date": 3, "seq": 4});
        same_in_every_layer("updates.getDifference", &answer);
        let peer = NameLast {
            user_id: 5,
            name: "peerUser",
        };
        let mut w = Writer::new();
        let ty = ParamType::Boxed("Peer".into());
        let at = At {
            schema: Schema::api(),
            ty: &ty,
            depth: 0,
            top: false,
            false_is_absent: false,
            direct: true,
            spare: &Spare::default(),
        };
        peer.serialize(ValueSer { at, w: &mut w }).unwrap();
        let mut json = Writer::new();
        crate::tl::encode_object(
            Schema::api(),
            &serde_json::to_value(&peer).unwrap(),
            &mut json,
        )
        .unwrap();
        assert_eq!(w.buf, json.buf);
    }

    /// `bytes` as raw bytes in a compact format, hex in JSON (as `application::tl::Bytes`).
    struct Raw(Vec<u8>);

    impl Serialize for Raw {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            if s.is_human_readable() {
                s.serialize_str(&hex::encode(&self.0))
            } else {
                s.serialize_bytes(&self.0)
            }
        }
    }

    #[derive(Serialize)]
    #[serde(tag = "_", rename = "upload.file")]
    struct File {
        #[serde(rename = "type")]
        file_type: Value,
        mtime: i32,
        bytes: Raw,
    }

    #[test]
    fn raw_bytes_are_written_as_their_hex_would_be() {
        let file = File {
            file_type: json!({"_": "storage.filePartial"}),
            mtime: 1,
            bytes: Raw((0..=255u8).cycle().take(70_000).collect()),
        };
        same_in_every_layer("upload.getFile", &file);
    }

    #[test]
    fn nesting_past_the_depth_is_refused() {
        let mut deep = json!({"_": "textPlain", "text": "x"});
        for _ in 0..MAX_DEPTH {
            deep = json!({"_": "textBold", "text": deep});
        }
        let page = json!({"_": "pageBlockParagraph", "text": deep});
        let mut w = Writer::new();
        let ty = ParamType::Boxed("PageBlock".into());
        let at = At {
            schema: Schema::api(),
            ty: &ty,
            depth: 0,
            top: false,
            false_is_absent: false,
            direct: true,
            spare: &Spare::default(),
        };
        assert_eq!(
            page.serialize(ValueSer { at, w: &mut w }).err(),
            Some(TlJsonError::TooDeep)
        );
    }

    #[derive(Serialize)]
    #[serde(tag = "_", rename = "userStatusRecently")]
    struct Recently {}

    #[derive(Serialize)]
    #[serde(tag = "_", rename = "user")]
    struct User {
        id: i64,
        access_hash: i64,
        first_name: &'static str,
        last_name: &'static str,
        phone: &'static str,
        status: Recently,
    }

    #[derive(Serialize)]
    #[serde(tag = "_", rename = "updates.state")]
    struct State {
        pts: i32,
        qts: i32,
        date: i32,
        seq: i32,
        unread_count: i32,
    }

    #[derive(Serialize)]
    #[serde(tag = "_", rename = "updates.difference")]
    struct Difference {
        new_messages: Vec<InOrder>,
        new_encrypted_messages: Vec<Value>,
        other_updates: Vec<Value>,
        chats: Vec<Value>,
        users: Vec<User>,
        state: State,
    }

    /// A typed getDifference-sized answer (fields in the schema's order, as the application's
    /// are) written many times, in one pass and through the scratch buffers: `cargo test
    /// --release -p ptslog-mtproto --lib typed::tests::timing -- --ignored --nocapture` prints µs
    /// per answer.
    #[test]
    #[ignore]
    fn timing() {
        let answer = Difference {
            new_messages: (0..100)
                .map(|id| InOrder {
                    out: id % 2 == 0,
                    id,
                    from_id: Some(PeerUser { user_id: 8 }),
                    peer_id: PeerUser { user_id: 7 },
                    date: 1_700_000_000 + id,
                    message: "hello world, a message of some length ".repeat(3),
                    entities: vec![Bold {
                        offset: 0,
                        length: 5,
                    }],
                    edit_date: None,
                    not_a_field: 0,
                })
                .collect(),
            new_encrypted_messages: vec![],
            other_updates: vec![],
            chats: vec![],
            users: (0..20)
                .map(|id| User {
                    id,
                    access_hash: -9,
                    first_name: "A",
                    last_name: "B",
                    phone: "1555",
                    status: Recently {},
                })
                .collect(),
            state: State {
                pts: 100,
                qts: 0,
                date: 1,
                seq: 0,
                unread_count: 3,
            },
        };
        let schema = Schema::api();
        let ty = result_type(schema, "updates.getDifference");
        let n = 3000;
        for round in 0..3 {
            for direct in [true, false] {
                let t = std::time::Instant::now();
                let mut size = 0;
                for _ in 0..n {
                    let mut w = Writer::new();
                    write_answer(schema, &ty, &answer, &mut w, direct).unwrap();
                    size = w.buf.len();
                    std::hint::black_box(&w);
                }
                eprintln!(
                    "round {round}, one pass {direct}: {:.1} µs per answer of {size} bytes",
                    t.elapsed().as_secs_f64() * 1e6 / n as f64,
                );
            }
        }
    }
}
