use rand::Rng;

use super::TransportError;
use crate::MAX_FRAME;

/// The framing of packets, after any obfuscation is removed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Abridged,
    Intermediate,
    PaddedIntermediate,
    Full,
}

/// One direction-pair of a connection's framing: decodes the client's frames and encodes ours.
#[derive(Debug, Clone)]
pub struct Framing {
    pub kind: Kind,
    recv_seq: u32,
    send_seq: u32,
}

impl Framing {
    pub fn new(kind: Kind) -> Self {
        Self {
            kind,
            recv_seq: 0,
            send_seq: 0,
        }
    }

    /// Takes the first complete frame off `buf`, if there is one. An error means the stream is
    /// unusable (the caller closes the connection); it never panics on any input.
    pub fn decode(&mut self, buf: &mut Vec<u8>) -> Result<Option<Vec<u8>>, TransportError> {
        match self.kind {
            Kind::Abridged => {
                let Some(&first) = buf.first() else {
                    return Ok(None);
                };
                // The top bit asks for a quick ack, which we do not send.
                let (words, header) = if first & 0x7f == 0x7f {
                    if buf.len() < 4 {
                        return Ok(None);
                    }
                    let n = u32::from_le_bytes([buf[1], buf[2], buf[3], 0]) as usize;
                    (n, 4)
                } else {
                    (usize::from(first & 0x7f), 1)
                };
                let len = words * 4;
                check_len(len, 0)?;
                take(buf, header, len)
            }
            Kind::Intermediate | Kind::PaddedIntermediate => {
                if buf.len() < 4 {
                    return Ok(None);
                }
                let len =
                    (u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) & 0x7fff_ffff) as usize;
                // Padded intermediate: a payload of up to MAX_FRAME and its padding.
                let padding = if self.kind == Kind::PaddedIntermediate {
                    MAX_PADDING
                } else {
                    0
                };
                check_len(len, padding)?;
                if self.kind == Kind::Intermediate && !len.is_multiple_of(4) {
                    return Err(TransportError::BadLength(len));
                }
                take(buf, 4, len)
            }
            Kind::Full => {
                if buf.len() < 4 {
                    return Ok(None);
                }
                let total = u32::from_le_bytes([buf[0], buf[1], buf[2], buf[3]]) as usize;
                if total < 12 || !total.is_multiple_of(4) {
                    return Err(TransportError::BadLength(total));
                }
                check_len(total - 12, 0)?;
                if buf.len() < total {
                    return Ok(None);
                }
                let seq = u32::from_le_bytes([buf[4], buf[5], buf[6], buf[7]]);
                let crc = u32::from_le_bytes([
                    buf[total - 4],
                    buf[total - 3],
                    buf[total - 2],
                    buf[total - 1],
                ]);
                if crc32fast::hash(&buf[..total - 4]) != crc {
                    return Err(TransportError::BadCrc);
                }
                if seq != self.recv_seq {
                    return Err(TransportError::BadSeq {
                        got: seq,
                        expected: self.recv_seq,
                    });
                }
                self.recv_seq = self.recv_seq.wrapping_add(1);
                let payload = buf[8..total - 4].to_vec();
                buf.drain(..total);
                Ok(Some(payload))
            }
        }
    }

    /// Appends one frame carrying `payload` (whose length is a multiple of 4) to `out`.
    pub fn encode(&mut self, payload: &[u8], out: &mut Vec<u8>) {
        match self.kind {
            Kind::Abridged => {
                let words = payload.len() / 4;
                if words < 0x7f {
                    out.push(words as u8);
                } else {
                    out.push(0x7f);
                    out.extend_from_slice(&(words as u32).to_le_bytes()[..3]);
                }
                out.extend_from_slice(payload);
            }
            Kind::Intermediate => {
                out.extend_from_slice(&(payload.len() as u32).to_le_bytes());
                out.extend_from_slice(payload);
            }
            Kind::PaddedIntermediate => {
                let mut rng = rand::thread_rng();
                let pad: usize = rng.gen_range(0..=MAX_PADDING);
                out.extend_from_slice(&((payload.len() + pad) as u32).to_le_bytes());
                out.extend_from_slice(payload);
                out.extend((0..pad).map(|_| rng.gen::<u8>()));
            }
            Kind::Full => {
                let start = out.len();
                out.extend_from_slice(&((payload.len() + 12) as u32).to_le_bytes());
                out.extend_from_slice(&self.send_seq.to_le_bytes());
                out.extend_from_slice(payload);
                let crc = crc32fast::hash(&out[start..]);
                out.extend_from_slice(&crc.to_le_bytes());
                self.send_seq = self.send_seq.wrapping_add(1);
            }
        }
    }

    /// The client-side counterpart of [`Framing::encode`] for tests and tools: frames as a client
    /// would (same layout; the server accepts what it sends).
    pub fn encode_as_client(&mut self, payload: &[u8], out: &mut Vec<u8>) {
        self.encode(payload, out)
    }
}

/// Padded intermediate adds 0 to 15 random bytes after a payload.
const MAX_PADDING: usize = 15;

fn check_len(len: usize, padding: usize) -> Result<(), TransportError> {
    if len > MAX_FRAME + padding {
        return Err(TransportError::TooLarge(len));
    }
    if len < 4 {
        return Err(TransportError::BadLength(len));
    }
    Ok(())
}

fn take(buf: &mut Vec<u8>, header: usize, len: usize) -> Result<Option<Vec<u8>>, TransportError> {
    if buf.len() < header + len {
        return Ok(None);
    }
    let payload = buf[header..header + len].to_vec();
    buf.drain(..header + len);
    Ok(Some(payload))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [Kind; 4] = [
        Kind::Abridged,
        Kind::Intermediate,
        Kind::PaddedIntermediate,
        Kind::Full,
    ];

    #[test]
    fn frames_round_trip_byte_by_byte() {
        for kind in KINDS {
            let mut tx = Framing::new(kind);
            let mut rx = Framing::new(kind);
            let mut wire = Vec::new();
            let payloads: Vec<Vec<u8>> = [4usize, 8, 504, 508, 1024, 4096]
                .iter()
                .map(|n| (0..*n).map(|i| (i * 7) as u8).collect())
                .collect();
            for p in &payloads {
                tx.encode(p, &mut wire);
            }
            let mut buf = Vec::new();
            let mut got = Vec::new();
            for b in wire {
                buf.push(b);
                while let Some(frame) = rx.decode(&mut buf).unwrap() {
                    got.push(frame);
                }
            }
            assert!(buf.is_empty());
            assert_eq!(got.len(), payloads.len(), "{kind:?}");
            for (g, p) in got.iter().zip(&payloads) {
                // Padded intermediate carries up to 15 bytes of padding after the payload.
                assert_eq!(&g[..p.len()], &p[..], "{kind:?}");
                assert!(g.len() - p.len() < 16);
            }
        }
    }

    #[test]
    fn oversized_frames_are_refused_before_they_arrive() {
        let too_big = (crate::MAX_FRAME + 4) as u32;
        let mut abridged = vec![0x7f];
        abridged.extend_from_slice(&(too_big / 4).to_le_bytes()[..3]);
        assert!(matches!(
            Framing::new(Kind::Abridged).decode(&mut abridged),
            Err(TransportError::TooLarge(_))
        ));
        let mut inter = too_big.to_le_bytes().to_vec();
        assert!(Framing::new(Kind::Intermediate).decode(&mut inter).is_err());
        let mut full = (too_big + 12).to_le_bytes().to_vec();
        assert!(Framing::new(Kind::Full).decode(&mut full).is_err());
    }

    #[test]
    fn a_frame_at_the_limit_passes_in_every_framing_and_one_word_more_is_refused() {
        let max = vec![5u8; crate::MAX_FRAME];
        for kind in KINDS {
            // Padded intermediate pads up to 15 bytes past the limit (found by the fuzzer).
            for _ in 0..8 {
                let mut wire = Vec::new();
                Framing::new(kind).encode(&max, &mut wire);
                let got = Framing::new(kind).decode(&mut wire).unwrap().unwrap();
                assert_eq!(&got[..max.len()], &max[..], "{kind:?}");
            }
            if kind == Kind::PaddedIntermediate {
                continue;
            }
            let mut wire = Vec::new();
            Framing::new(kind).encode(&vec![5u8; crate::MAX_FRAME + 4], &mut wire);
            assert!(
                matches!(
                    Framing::new(kind).decode(&mut wire),
                    Err(TransportError::TooLarge(_))
                ),
                "{kind:?}"
            );
        }
        // Padded intermediate: the frame length may reach MAX_FRAME + 15, not one byte more.
        let at = (crate::MAX_FRAME + MAX_PADDING) as u32;
        let mut ok = at.to_le_bytes().to_vec();
        assert_eq!(
            Framing::new(Kind::PaddedIntermediate).decode(&mut ok),
            Ok(None)
        );
        let mut over = (at + 1).to_le_bytes().to_vec();
        assert!(matches!(
            Framing::new(Kind::PaddedIntermediate).decode(&mut over),
            Err(TransportError::TooLarge(_))
        ));
    }

    #[test]
    fn full_transport_checks_crc_and_sequence() {
        let mut tx = Framing::new(Kind::Full);
        let mut wire = Vec::new();
        tx.encode(&[1, 2, 3, 4], &mut wire);
        let mut bad = wire.clone();
        bad[9] ^= 1;
        assert_eq!(
            Framing::new(Kind::Full).decode(&mut bad),
            Err(TransportError::BadCrc)
        );
        let mut rx = Framing::new(Kind::Full);
        let mut once = wire.clone();
        assert!(rx.decode(&mut once).unwrap().is_some());
        // The same frame again carries sequence number 0 where 1 is due: a replay.
        let mut again = wire.clone();
        assert!(matches!(
            rx.decode(&mut again),
            Err(TransportError::BadSeq {
                got: 0,
                expected: 1
            })
        ));
        let mut short = 8u32.to_le_bytes().to_vec();
        assert!(Framing::new(Kind::Full).decode(&mut short).is_err());
    }

    #[test]
    fn malformed_lengths_are_errors_not_panics() {
        let mut seed = 99u64;
        for kind in KINDS {
            for _ in 0..5000 {
                let mut buf: Vec<u8> = (0..(seed % 40) as usize)
                    .map(|_| {
                        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                        (seed >> 56) as u8
                    })
                    .collect();
                let mut f = Framing::new(kind);
                while let Ok(Some(_)) = f.decode(&mut buf) {}
            }
        }
        let mut zero = vec![0u8];
        assert!(Framing::new(Kind::Abridged).decode(&mut zero).is_err());
        let mut odd = 5u32.to_le_bytes().to_vec();
        assert!(Framing::new(Kind::Intermediate).decode(&mut odd).is_err());
    }
}
