//! Service messages of the encrypted layer (mtproto.tl): their constructor ids and builders.

use flate2::{Compress, Compression, FlushCompress, Status};
use std::cell::RefCell;

use crate::crypto::FutureSalt;
use crate::tl::{Writer, GZIP_PACKED};

pub const MSG_CONTAINER: u32 = 0x73f1f8dc;
pub const MSGS_ACK: u32 = 0x62d6b459;
pub const PING: u32 = 0x7abe77ec;
pub const PING_DELAY_DISCONNECT: u32 = 0xf3427b8c;
pub const PONG: u32 = 0x347773c5;
pub const RPC_RESULT: u32 = 0xf35c6d01;
pub const RPC_ERROR: u32 = 0x2144ca19;
pub const BAD_MSG_NOTIFICATION: u32 = 0xa7eff811;
pub const BAD_SERVER_SALT: u32 = 0xedab447b;
pub const NEW_SESSION_CREATED: u32 = 0x9ec20908;
pub const GET_FUTURE_SALTS: u32 = 0xb921bd04;
pub const FUTURE_SALTS: u32 = 0xae500895;
pub const DESTROY_SESSION: u32 = 0xe7512126;
pub const DESTROY_SESSION_OK: u32 = 0xe22045fc;
pub const DESTROY_SESSION_NONE: u32 = 0x62d350c9;
pub const MSGS_STATE_REQ: u32 = 0xda69fb52;
pub const MSGS_STATE_INFO: u32 = 0x04deb57d;
pub const MSG_RESEND_REQ: u32 = 0x7d861a08;
pub const MSGS_ALL_INFO: u32 = 0x8cc0d131;
pub const RPC_DROP_ANSWER: u32 = 0x58e4a740;
pub const RPC_ANSWER_UNKNOWN: u32 = 0x5e2ad36e;
pub const HTTP_WAIT: u32 = 0x9299359f;

/// Results larger than this travel gzip-packed (file bytes apart).
const GZIP_OVER: usize = 1024;

/// `upload.file`: a piece of a file, whose bytes (photos, video, archives) are already compressed;
/// gzipping up to 1 MiB of them per call cost the server more CPU than the rest of the call and
/// saved nothing, so they travel as they are (Telegram's servers do the same).
const UPLOAD_FILE: u32 = 0x096a18d5;

/// `rpc_result` around an already serialized result: gzip-packed when large, unless it is file
/// bytes or packing would not make it smaller.
pub fn rpc_result(req_msg_id: i64, result: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(RPC_RESULT).i64(req_msg_id);
    let file_bytes = result.get(..4) == Some(&UPLOAD_FILE.to_le_bytes()[..]);
    if result.len() > GZIP_OVER && !file_bytes {
        if let Some(packed) = gzip(result) {
            w.u32(GZIP_PACKED).bytes(&packed);
            return w.buf;
        }
    }
    w.raw(result);
    w.buf
}

thread_local! {
    /// One deflate state per thread, reset for each answer: a new one allocates and clears a few
    /// hundred KB, which cost as much as compressing a 20 KB answer at level 1 (perf of the
    /// MTProto getDifference phase, 2026-12-07).
    static DEFLATE: RefCell<Option<Compress>> = const { RefCell::new(None) };
}

/// `data` gzip-compressed at level 1, when that saves more than the 8 bytes `gzip_packed` adds;
/// compressing stops as soon as it cannot.
fn gzip(data: &[u8]) -> Option<Vec<u8>> {
    DEFLATE.with(|state| {
        let mut state = state.try_borrow_mut().ok()?;
        let deflate = state.get_or_insert_with(|| Compress::new_gzip(Compression::fast(), 15));
        deflate.reset();
        // Room for what would be worth sending: a longer stream ends the compression early.
        let worth = data.len().saturating_sub(9);
        let mut out = Vec::with_capacity(worth);
        match deflate.compress_vec(data, &mut out, FlushCompress::Finish) {
            Ok(Status::StreamEnd) if out.len() <= worth => Some(out),
            _ => None,
        }
    })
}

pub fn rpc_error(req_msg_id: i64, code: i32, message: &str) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(RPC_RESULT)
        .i64(req_msg_id)
        .u32(RPC_ERROR)
        .i32(code)
        .bytes(message.as_bytes());
    w.buf
}

pub fn bad_msg_notification(bad_msg_id: i64, bad_seq: i32, code: i32) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(BAD_MSG_NOTIFICATION)
        .i64(bad_msg_id)
        .i32(bad_seq)
        .i32(code);
    w.buf
}

pub fn bad_server_salt(bad_msg_id: i64, bad_seq: i32, new_salt: i64) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(BAD_SERVER_SALT)
        .i64(bad_msg_id)
        .i32(bad_seq)
        .i32(48)
        .i64(new_salt);
    w.buf
}

pub fn new_session_created(first_msg_id: i64, unique_id: i64, salt: i64) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(NEW_SESSION_CREATED)
        .i64(first_msg_id)
        .i64(unique_id)
        .i64(salt);
    w.buf
}

pub fn pong(msg_id: i64, ping_id: i64) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(PONG).i64(msg_id).i64(ping_id);
    w.buf
}

/// `future_salts` (a bare vector of `future_salt`: valid_since, valid_until, salt).
pub fn future_salts(req_msg_id: i64, now: i32, salts: &[FutureSalt]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(FUTURE_SALTS)
        .i64(req_msg_id)
        .i32(now)
        .i32(salts.len() as i32);
    for s in salts {
        w.i32(s.valid_since).i32(s.valid_until).i64(s.salt);
    }
    w.buf
}

#[cfg(test)]
mod rpc_result_tests {
    use super::*;

    fn result_of(w: &[u8]) -> (u32, usize) {
        (u32::from_le_bytes(w[12..16].try_into().unwrap()), w.len())
    }

    #[test]
    fn large_results_are_packed_but_file_bytes_and_incompressible_ones_are_not() {
        // A large compressible answer: packed.
        let mut big = 0x1cb5c415_u32.to_le_bytes().to_vec();
        big.extend(std::iter::repeat_n(7_u8, 4096));
        assert_eq!(result_of(&rpc_result(1, &big)).0, GZIP_PACKED);
        // At the threshold: as it is.
        let at = vec![0_u8; GZIP_OVER];
        assert_eq!(rpc_result(1, &at)[12..], at[..]);
        // upload.file, however compressible its bytes: as it is.
        let mut file = UPLOAD_FILE.to_le_bytes().to_vec();
        file.extend(std::iter::repeat_n(0_u8, 64 * 1024));
        let out = rpc_result(1, &file);
        assert_eq!(result_of(&out), (UPLOAD_FILE, 12 + file.len()));
        // Bytes gzip cannot shrink: as they are.
        let mut noise = 0x1cb5c415_u32.to_le_bytes().to_vec();
        let mut x: u64 = 0x9e3779b97f4a7c15;
        noise.extend((0..8192).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        }));
        assert_eq!(rpc_result(1, &noise)[12..], noise[..]);
    }

    #[test]
    fn packed_results_are_gzip_and_each_one_stands_alone() {
        // One thread's state serves answer after answer (and one that did not pack between).
        let answers: Vec<Vec<u8>> = (0..3_u8)
            .map(|i| {
                let mut a = 0x1cb5c415_u32.to_le_bytes().to_vec();
                a.extend((0..5000_u32).map(|j| (j % 7) as u8 + i));
                a
            })
            .collect();
        for a in &answers {
            let out = rpc_result(9, a);
            assert_eq!(result_of(&out).0, GZIP_PACKED);
            let mut r = crate::tl::Reader::new(&out[16..]);
            let packed = r.bytes().unwrap();
            assert_eq!(&packed[..2], &[0x1f, 0x8b], "a gzip member");
            assert_eq!(crate::tl::gunzip(packed).unwrap(), *a);
            // At the threshold, as it is; the next answer still packs.
            assert_eq!(
                rpc_result(1, &vec![0_u8; GZIP_OVER])[12..],
                vec![0_u8; GZIP_OVER]
            );
        }
    }
}
