//! Property-based fuzzing (proptest, stable Rust) of what a client's bytes reach before anything
//! else: the TL decoder with nested `gzip_packed` and vectors of any announced length, every
//! transport's framing (plain and obfuscated), and the session's unwrapping of containers, gzip
//! and msg_id lists. Besides "never panics", each harness checks a bound: the bytes a decode may
//! allocate at its peak (a counting allocator in this test binary), and what a message may expand
//! to. The suite runs a few hundred cases; `PTSLOG_FUZZ_CASES` sets how many (`scripts/fuzz` runs
//! every `fuzz_` test with a high count).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::io::Write;

use flate2::write::GzEncoder;
use flate2::Compression;
use proptest::prelude::*;
use proptest::test_runner::Config;
use ptslog_mtproto::service::{
    MSGS_ACK, MSGS_ALL_INFO, MSGS_STATE_REQ, MSG_CONTAINER, MSG_RESEND_REQ, PING,
};
use ptslog_mtproto::session::{Action, Plain, Session, MAX_CONTAINER_MESSAGES};
use ptslog_mtproto::tl::{
    decode_object_within, DecodeBudget, Reader, Schema, Writer, BOOL_FALSE, BOOL_TRUE, GZIP_PACKED,
    MAX_DEPTH, MAX_INFLATED_BYTES, MAX_VALUES, VECTOR,
};
use ptslog_mtproto::transport::{Framing, Kind, Obfuscation, ServerTransport};
use ptslog_mtproto::MAX_FRAME;

// ---- A counting allocator: the peak bytes live on this thread while a closure runs. ----

struct Counting;

thread_local! {
    static LIVE: Cell<isize> = const { Cell::new(0) };
    static PEAK: Cell<isize> = const { Cell::new(0) };
}

fn track(delta: isize) {
    let _ = LIVE.try_with(|live| {
        let now = live.get() + delta;
        live.set(now);
        let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now)));
    });
}

// SAFETY: every call goes to the system allocator unchanged; only sizes are counted.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            track(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        track(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            track(new_size as isize - layout.size() as isize);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and answers its result and the most bytes it had allocated at once.
fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
    let base = LIVE.with(Cell::get);
    PEAK.with(|p| p.set(base));
    let r = f();
    let peak = PEAK.with(Cell::get);
    (r, (peak - base).max(0) as usize)
}

/// What decoding one message may allocate at its peak: the inflated bytes (twice, for a
/// growing buffer), the JSON of the value budget (a few hundred bytes a value) and the hex of
/// `bytes` fields (twice the input). Before the budget, one 32 KB message reached gigabytes.
const PEAK_BOUND: usize = 4 * MAX_INFLATED_BYTES + MAX_VALUES * 512 + 2 * INPUT_CAP;

/// Serialized inputs are cut past this size: a frame is at most [`MAX_FRAME`], and what is
/// gzip-packed need not be much larger than the budget to go over it.
const INPUT_CAP: usize = MAX_INFLATED_BYTES + MAX_FRAME;

fn config() -> Config {
    let cases = std::env::var("PTSLOG_FUZZ_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(64);
    Config {
        cases,
        // Failures print their minimal input; no regression files are written into the tree.
        failure_persistence: None,
        ..Config::default()
    }
}

// ---- TL inputs: tokens that serialize to plausible and hostile TL. ----

#[derive(Debug, Clone)]
enum Tok {
    Id(u32),
    Int(i32),
    Long(i64),
    Bytes(Vec<u8>),
    /// `vector` and an announced count (maybe far more than follows).
    Vector(i32),
    /// `gzip_packed` around the tokens.
    Gzip(Vec<Tok>),
    /// The tokens again and again (inside gzip: a bomb).
    Repeat(Vec<Tok>, u32),
}

fn schema_ids() -> Vec<u32> {
    let s = Schema::api();
    let mut ids: Vec<u32> = [
        "invokeWithLayer",
        "initConnection",
        "invokeWithoutUpdates",
        "help.getConfig",
        "help.saveAppLog",
        "inputAppEvent",
        "jsonArray",
        "jsonObject",
        "jsonObjectValue",
        "jsonString",
        "jsonNull",
        "messages.sendMessage",
        "messages.deleteMessages",
        "messages.getMessages",
        "inputMessageID",
        "contacts.importContacts",
        "inputPhoneContact",
        "inputPeerSelf",
        "inputPeerUser",
        "messageEntityBold",
        "users.getUsers",
        "inputUserSelf",
        "updates",
        "user",
    ]
    .iter()
    .map(|n| s.by_name(n).unwrap_or_else(|| panic!("{n} in schema")).id)
    .collect();
    ids.extend([VECTOR, GZIP_PACKED, BOOL_TRUE, BOOL_FALSE]);
    ids
}

fn tok() -> impl Strategy<Value = Tok> {
    let count = prop_oneof![
        0..8i32,
        Just(1 << 16),
        Just(1 << 20),
        Just(i32::MAX),
        Just(-1),
        any::<i32>()
    ];
    let leaf = prop_oneof![
        4 => prop::sample::select(schema_ids()).prop_map(Tok::Id),
        1 => any::<i32>().prop_map(Tok::Int),
        1 => any::<i64>().prop_map(Tok::Long),
        1 => prop::collection::vec(any::<u8>(), 0..300).prop_map(Tok::Bytes),
        2 => count.prop_map(Tok::Vector),
    ];
    leaf.prop_recursive(5, 96, 8, |inner| {
        let times = prop_oneof![1..8u32, Just(1 << 12), Just(1 << 18), Just(1 << 22)];
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..8).prop_map(Tok::Gzip),
            (prop::collection::vec(inner, 1..4), times).prop_map(|(t, n)| Tok::Repeat(t, n)),
        ]
    })
}

fn gz(data: &[u8]) -> Vec<u8> {
    let mut e = GzEncoder::new(Vec::new(), Compression::fast());
    e.write_all(data).expect("in memory");
    e.finish().expect("in memory")
}

fn write_toks(toks: &[Tok], w: &mut Writer) {
    for t in toks {
        if w.buf.len() > INPUT_CAP {
            return;
        }
        match t {
            Tok::Id(id) => {
                w.u32(*id);
            }
            Tok::Int(n) => {
                w.i32(*n);
            }
            Tok::Long(n) => {
                w.i64(*n);
            }
            Tok::Bytes(b) => {
                w.bytes(b);
            }
            Tok::Vector(n) => {
                w.u32(VECTOR).i32(*n);
            }
            Tok::Gzip(inner) => {
                let mut iw = Writer::new();
                write_toks(inner, &mut iw);
                w.u32(GZIP_PACKED).bytes(&gz(&iw.buf));
            }
            Tok::Repeat(inner, n) => {
                let mut once = Writer::new();
                write_toks(inner, &mut once);
                for _ in 0..*n {
                    if w.buf.len() > INPUT_CAP {
                        return;
                    }
                    w.raw(&once.buf);
                }
            }
        }
    }
}

fn serialize(toks: &[Tok]) -> Vec<u8> {
    let mut w = Writer::new();
    write_toks(toks, &mut w);
    w.buf
}

proptest! {
    #![proptest_config(config())]

    /// Any token stream: the decoder answers (a value or an error), within the budget and the
    /// allocation bound; and gzip-packing a decodable input decodes to the same value.
    #[test]
    fn fuzz_tl_decoder_with_gzip_and_vectors(
        toks in prop::collection::vec(tok(), 1..24),
    ) {
        let body = serialize(&toks);
        let schema = Schema::api();
        let mut budget = DecodeBudget::default();
        let (plain, peak) = peak_during(|| {
            decode_object_within(schema, &mut Reader::new(&body), &mut budget)
        });
        prop_assert!(peak <= PEAK_BOUND, "decoding {} bytes peaked at {peak} bytes", body.len());
        prop_assert!(budget.values_left() <= MAX_VALUES);
        if let Ok(value) = plain {
            // One more level and its bytes are all the packed form may cost beyond the plain.
            let mut w = Writer::new();
            w.u32(GZIP_PACKED).bytes(&gz(&body));
            let mut again = DecodeBudget::new(MAX_INFLATED_BYTES + body.len(), MAX_VALUES + 1, MAX_DEPTH + 1);
            let packed = decode_object_within(schema, &mut Reader::new(&w.buf), &mut again);
            prop_assert_eq!(packed, Ok(value));
        }
    }

    /// Any prefix of a real request is an error, never a panic, and the whole one decodes.
    #[test]
    fn fuzz_tl_decoder_truncated_requests(
        ids in prop::collection::vec(any::<i32>(), 0..300),
        cut in any::<prop::sample::Index>(),
    ) {
        let s = Schema::api();
        let mut w = Writer::new();
        w.u32(s.by_name("messages.deleteMessages").expect("in schema").id).u32(1);
        w.u32(VECTOR).i32(ids.len() as i32);
        for id in &ids {
            w.i32(*id);
        }
        let full = w.buf;
        let at = cut.index(full.len());
        let mut budget = DecodeBudget::default();
        let v = decode_object_within(s, &mut Reader::new(&full), &mut budget).expect("decodes");
        prop_assert_eq!(v["id"].as_array().map(Vec::len), Some(ids.len()));
        let mut budget = DecodeBudget::default();
        prop_assert!(decode_object_within(s, &mut Reader::new(&full[..at]), &mut budget).is_err());
    }
}

// ---- Transports. ----

const KINDS: [(Kind, bool); 7] = [
    (Kind::Abridged, false),
    (Kind::Intermediate, false),
    (Kind::PaddedIntermediate, false),
    (Kind::Full, false),
    (Kind::Abridged, true),
    (Kind::Intermediate, true),
    (Kind::PaddedIntermediate, true),
];

fn payload() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        4 => 1..64usize,
        2 => 64..4096usize,
        1 => Just(MAX_FRAME / 4),
    ]
    .prop_flat_map(|words| prop::collection::vec(any::<u8>(), words * 4))
}

proptest! {
    #![proptest_config(config())]

    /// Every transport, plain or obfuscated, cut into arbitrary chunks: the server gets back
    /// exactly the packets sent, and its answer reads back on the client's side.
    #[test]
    fn fuzz_transport_framing_round_trips(
        which in 0..KINDS.len(),
        packets in prop::collection::vec(payload(), 1..5),
        chunk in 1..4096usize,
    ) {
        let (kind, obfuscated) = KINDS[which];
        let mut wire = Vec::new();
        let mut client = None;
        if obfuscated {
            let (header, c) = Obfuscation::client_header(kind);
            wire.extend_from_slice(&header);
            client = Some(c);
        } else {
            match kind {
                Kind::Abridged => wire.push(0xef),
                Kind::Intermediate => wire.extend_from_slice(&[0xee; 4]),
                Kind::PaddedIntermediate => wire.extend_from_slice(&[0xdd; 4]),
                Kind::Full => {}
            }
        }
        let mut framing = Framing::new(kind);
        let mut body = Vec::new();
        for p in &packets {
            framing.encode_as_client(p, &mut body);
        }
        if let Some(c) = &mut client {
            c.encrypt(&mut body);
        }
        wire.extend_from_slice(&body);
        let mut server = ServerTransport::new();
        let mut got = Vec::new();
        for piece in wire.chunks(chunk) {
            server.feed(piece).expect("a valid stream");
            while let Some(p) = server.next_packet().expect("valid frames") {
                got.push(p);
            }
        }
        prop_assert_eq!(server.kind(), Some((kind, obfuscated)));
        prop_assert_eq!(got.len(), packets.len());
        for (g, p) in got.iter().zip(&packets) {
            // Padded intermediate adds up to 15 bytes after the payload.
            prop_assert_eq!(&g[..p.len()], &p[..]);
            prop_assert!(g.len() - p.len() < 16);
        }
        let mut reply = server.encode(&packets[0]);
        if let Some(c) = &mut client {
            c.decrypt(&mut reply);
        }
        let back = Framing::new(kind).decode(&mut reply).expect("our frame").expect("complete");
        prop_assert_eq!(&back[..packets[0].len()], &packets[0][..]);
    }

    /// Garbage after each transport's tag (and bare garbage): errors or nothing, never a panic,
    /// never a packet over the frame limit, and flipping one byte of a valid full-transport
    /// stream is caught (CRC or length).
    #[test]
    fn fuzz_transport_framing_garbage(
        tag in 0..6usize,
        garbage in prop::collection::vec(any::<u8>(), 0..4096),
        chunk in 1..512usize,
        flip in any::<prop::sample::Index>(),
    ) {
        let mut stream: Vec<u8> = match tag {
            0 => vec![0xef],
            1 => vec![0xee; 4],
            2 => vec![0xdd; 4],
            3 => {
                let mut v = ((garbage.len() as u32 + 12) & !3).to_le_bytes().to_vec();
                v.extend_from_slice(&[0; 4]);
                v
            }
            4 => vec![0xef, 0x7f, 0xff, 0xff],
            _ => Vec::new(),
        };
        stream.extend_from_slice(&garbage);
        let mut server = ServerTransport::new();
        'feed: for piece in stream.chunks(chunk) {
            if server.feed(piece).is_err() {
                break;
            }
            loop {
                match server.next_packet() {
                    Ok(Some(p)) => prop_assert!(p.len() <= MAX_FRAME + 16),
                    Ok(None) => break,
                    Err(_) => break 'feed,
                }
            }
        }
        let payload: Vec<u8> = garbage.iter().copied().take(garbage.len() / 4 * 4).collect();
        if !payload.is_empty() {
            let mut wire = Vec::new();
            Framing::new(Kind::Full).encode(&payload, &mut wire);
            let i = flip.index(wire.len());
            wire[i] ^= 0x55;
            let mut rx = Framing::new(Kind::Full);
            let r = rx.decode(&mut wire);
            prop_assert!(!matches!(r, Ok(Some(ref p)) if p == &payload), "flip at {i} unnoticed");
        }
    }
}

// ---- The session's unwrapping. ----

const NOW: i64 = 1_764_489_600_000;

fn msg_id(n: i64) -> i64 {
    ((NOW / 1000) << 32) + n * 4
}

fn service_body() -> impl Strategy<Value = Vec<u8>> {
    let ids = prop_oneof![0..16i32, Just(4080), Just(4081), Just(1 << 20)];
    prop_oneof![
        (
            prop::sample::select(vec![
                MSGS_STATE_REQ,
                MSG_RESEND_REQ,
                MSGS_ALL_INFO,
                MSGS_ACK
            ]),
            ids,
        )
            .prop_map(|(id, n)| {
                let mut w = Writer::new();
                w.u32(id).u32(VECTOR).i32(n);
                for i in 0..n.clamp(0, 5000) {
                    w.i64(msg_id(i as i64));
                }
                w.buf
            }),
        any::<i64>().prop_map(|p| {
            let mut w = Writer::new();
            w.u32(PING).i64(p);
            w.buf
        }),
        prop::collection::vec(tok(), 1..6).prop_map(|t| serialize(&t)),
        prop::collection::vec(tok(), 1..6).prop_map(|t| {
            let mut w = Writer::new();
            w.u32(GZIP_PACKED).bytes(&gz(&serialize(&t)));
            w.buf
        }),
    ]
}

fn container(items: &[Vec<u8>], announced: Option<i32>) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(MSG_CONTAINER)
        .i32(announced.unwrap_or(items.len() as i32));
    for (i, body) in items.iter().enumerate() {
        let body = &body[..body.len() / 4 * 4];
        w.i64(msg_id(100 + i as i64))
            .i32(i as i32 * 2 + 1)
            .i32(body.len() as i32)
            .raw(body);
    }
    w.buf
}

proptest! {
    #![proptest_config(config())]

    /// Containers (within, at and past their cap, with counts that lie), gzip, msg_id lists and
    /// random objects: the session answers within the message's budget, and the calls it hands
    /// on total no more than the frame and what the budget let it inflate.
    #[test]
    fn fuzz_session_unwrapping(
        items in prop::collection::vec(service_body(), 0..12),
        shape in 0..4usize,
        lie in prop_oneof![Just(None), Just(Some(MAX_CONTAINER_MESSAGES as i32 + 1)), any::<i32>().prop_map(Some)],
    ) {
        let body = match shape {
            0 => container(&items, None),
            1 => container(&items, lie),
            2 => {
                let mut w = Writer::new();
                w.u32(GZIP_PACKED).bytes(&gz(&container(&items, None)));
                w.buf
            }
            _ => items.concat(),
        };
        let body = body[..body.len() / 4 * 4].to_vec();
        let mut session = Session::new(1, 5);
        let m = Plain { salt: 5, session_id: 1, msg_id: msg_id(1), seq_no: 0, body };
        let (actions, peak) = peak_during(|| session.receive(&m, NOW));
        prop_assert!(peak <= PEAK_BOUND, "peak {peak}");
        let handed_on: usize = actions
            .iter()
            .map(|a| match a {
                Action::Call { body, .. } => body.len(),
                _ => 0,
            })
            .sum();
        prop_assert!(handed_on <= m.body.len() + MAX_INFLATED_BYTES);
        prop_assert!(actions.len() <= MAX_CONTAINER_MESSAGES + 2);
    }
}
