//! Service messages of the encrypted layer (mtproto.tl): their constructor ids and builders.

use flate2::write::GzEncoder;
use flate2::Compression;
use std::io::Write;

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

/// Results larger than this travel gzip-packed.
const GZIP_OVER: usize = 1024;

/// `rpc_result` around an already serialized result (gzip-packed when large).
pub fn rpc_result(req_msg_id: i64, result: &[u8]) -> Vec<u8> {
    let mut w = Writer::new();
    w.u32(RPC_RESULT).i64(req_msg_id);
    if result.len() > GZIP_OVER {
        let mut gz = GzEncoder::new(Vec::new(), Compression::fast());
        if gz.write_all(result).is_ok() {
            if let Ok(packed) = gz.finish() {
                w.u32(GZIP_PACKED).bytes(&packed);
                return w.buf;
            }
        }
    }
    w.raw(result);
    w.buf
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
