//! obfuscated2: the client's random 64-byte header carries the keys of two AES-256-CTR streams,
//! and its bytes 56..60, decrypted, name the framing inside.

use aes::cipher::{KeyIvInit, StreamCipher};

use super::{Kind, TransportError};

type Ctr = ctr::Ctr128BE<aes::Aes256>;

pub struct Obfuscation {
    /// Decrypts what the client sends.
    rx: Ctr,
    /// Encrypts what we send.
    tx: Ctr,
}

impl std::fmt::Debug for Obfuscation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Obfuscation")
    }
}

impl Obfuscation {
    /// Reads the client's 64-byte header: the ciphers and the framing it announces.
    pub fn from_header(header: &[u8; 64]) -> Result<(Self, Kind), TransportError> {
        let mut rx = Ctr::new(header[8..40].into(), header[40..56].into());
        let mut reversed = [0u8; 48];
        reversed.copy_from_slice(&header[8..56]);
        reversed.reverse();
        let tx = Ctr::new(reversed[..32].into(), reversed[32..48].into());
        let mut plain = *header;
        rx.apply_keystream(&mut plain);
        let kind = match [plain[56], plain[57], plain[58], plain[59]] {
            [0xef, 0xef, 0xef, 0xef] => Kind::Abridged,
            [0xee, 0xee, 0xee, 0xee] => Kind::Intermediate,
            [0xdd, 0xdd, 0xdd, 0xdd] => Kind::PaddedIntermediate,
            _ => return Err(TransportError::UnknownProtocol),
        };
        Ok((Self { rx, tx }, kind))
    }

    pub fn decrypt(&mut self, data: &mut [u8]) {
        self.rx.apply_keystream(data);
    }

    pub fn encrypt(&mut self, data: &mut [u8]) {
        self.tx.apply_keystream(data);
    }

    /// A client's header for `kind` and the client's own ciphers (encrypt, decrypt), for tests and
    /// tools that play the client.
    pub fn client_header(kind: Kind) -> ([u8; 64], ClientObfuscation) {
        use rand::RngCore;
        let tag: [u8; 4] = match kind {
            Kind::Abridged => [0xef; 4],
            Kind::Intermediate => [0xee; 4],
            Kind::PaddedIntermediate | Kind::Full => [0xdd; 4],
        };
        let mut header = [0u8; 64];
        loop {
            rand::thread_rng().fill_bytes(&mut header);
            let first = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
            if header[0] != 0xef
                && header[4..8] != [0, 0, 0, 0]
                && ![
                    0x4441_4548,
                    0x5453_4f50,
                    0x2054_4547,
                    0xeeee_eeee,
                    0xdddd_dddd,
                    0x0201_0316,
                ]
                .contains(&first)
            {
                break;
            }
        }
        header[56..60].copy_from_slice(&tag);
        let mut enc = Ctr::new(header[8..40].into(), header[40..56].into());
        let mut reversed = [0u8; 48];
        reversed.copy_from_slice(&header[8..56]);
        reversed.reverse();
        let dec = Ctr::new(reversed[..32].into(), reversed[32..48].into());
        let mut encrypted = header;
        enc.apply_keystream(&mut encrypted);
        header[56..64].copy_from_slice(&encrypted[56..64]);
        (header, ClientObfuscation { enc, dec })
    }
}

/// The client's side of obfuscated2 (tests and tools).
pub struct ClientObfuscation {
    pub enc: Ctr,
    pub dec: Ctr,
}

impl ClientObfuscation {
    pub fn encrypt(&mut self, data: &mut [u8]) {
        self.enc.apply_keystream(data);
    }

    pub fn decrypt(&mut self, data: &mut [u8]) {
        self.dec.apply_keystream(data);
    }
}
