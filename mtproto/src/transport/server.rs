use super::{Framing, Kind, Obfuscation, TransportError};

/// A connection's transport seen from the server: detects the client's transport from its first
/// bytes, removes obfuscation, and splits the stream into packets.
#[derive(Debug, Default)]
pub struct ServerTransport {
    framing: Option<Framing>,
    obfuscation: Option<Obfuscation>,
    /// Bytes received and not yet framed (already deobfuscated once the transport is known).
    buf: Vec<u8>,
}

impl ServerTransport {
    pub fn new() -> Self {
        Self::default()
    }

    /// The transport in use, once known, and whether it is obfuscated.
    pub fn kind(&self) -> Option<(Kind, bool)> {
        self.framing
            .as_ref()
            .map(|f| (f.kind, self.obfuscation.is_some()))
    }

    /// Takes bytes read from the socket.
    pub fn feed(&mut self, data: &[u8]) -> Result<(), TransportError> {
        match (&self.framing, &mut self.obfuscation) {
            (Some(_), Some(obf)) => {
                let start = self.buf.len();
                self.buf.extend_from_slice(data);
                obf.decrypt(&mut self.buf[start..]);
            }
            _ => self.buf.extend_from_slice(data),
        }
        if self.framing.is_none() {
            self.detect()?;
        }
        Ok(())
    }

    fn detect(&mut self) -> Result<(), TransportError> {
        let b = &self.buf;
        if b.first() == Some(&0xef) {
            self.buf.drain(..1);
            self.framing = Some(Framing::new(Kind::Abridged));
            return Ok(());
        }
        if b.len() < 8 {
            return Ok(());
        }
        let first = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        let second = u32::from_le_bytes([b[4], b[5], b[6], b[7]]);
        match first {
            0xeeee_eeee => {
                self.buf.drain(..4);
                self.framing = Some(Framing::new(Kind::Intermediate));
                return Ok(());
            }
            0xdddd_dddd => {
                self.buf.drain(..4);
                self.framing = Some(Framing::new(Kind::PaddedIntermediate));
                return Ok(());
            }
            // Full: a length, then sequence number 0 (an obfuscated header never has zero there).
            len if second == 0 && len >= 12 && len as usize <= crate::MAX_FRAME + 12 => {
                self.framing = Some(Framing::new(Kind::Full));
                return Ok(());
            }
            _ => {}
        }
        if b.len() < 64 {
            return Ok(());
        }
        let mut header = [0u8; 64];
        header.copy_from_slice(&b[..64]);
        // The header went through the client's cipher (from_header consumed those 64 bytes of
        // keystream): the stream continues after it.
        let (mut obf, kind) = Obfuscation::from_header(&header)?;
        let mut rest = self.buf.split_off(64);
        obf.decrypt(&mut rest);
        self.buf = rest;
        self.obfuscation = Some(obf);
        self.framing = Some(Framing::new(kind));
        Ok(())
    }

    /// The next complete packet, if one has arrived.
    pub fn next_packet(&mut self) -> Result<Option<Vec<u8>>, TransportError> {
        match &mut self.framing {
            Some(f) => f.decode(&mut self.buf),
            None => Ok(None),
        }
    }

    /// Frames (and obfuscates) one packet for the socket. Before the transport is known nothing
    /// can be sent, and the result is empty.
    pub fn encode(&mut self, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(payload.len() + 16);
        if let Some(f) = &mut self.framing {
            f.encode(payload, &mut out);
        }
        if let Some(obf) = &mut self.obfuscation {
            obf.encrypt(&mut out);
        }
        out
    }

    /// A transport error packet (`-404`: unknown auth key, `-429`: flood, …).
    pub fn encode_error(&mut self, code: i32) -> Vec<u8> {
        self.encode(&code.to_le_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client_stream(
        kind: Kind,
        obfuscated: bool,
        packets: &[Vec<u8>],
    ) -> (Vec<u8>, Option<super::super::obfuscated::ClientObfuscation>) {
        let mut out = Vec::new();
        let mut client = None;
        if obfuscated {
            let (header, c) = Obfuscation::client_header(kind);
            out.extend_from_slice(&header);
            client = Some(c);
        } else {
            match kind {
                Kind::Abridged => out.push(0xef),
                Kind::Intermediate => out.extend_from_slice(&[0xee; 4]),
                Kind::PaddedIntermediate => out.extend_from_slice(&[0xdd; 4]),
                Kind::Full => {}
            }
        }
        let mut framing = Framing::new(kind);
        let mut body = Vec::new();
        for p in packets {
            framing.encode_as_client(p, &mut body);
        }
        if let Some(c) = &mut client {
            c.encrypt(&mut body);
        }
        out.extend_from_slice(&body);
        (out, client)
    }

    #[test]
    fn every_transport_is_detected_and_round_trips() {
        let packets: Vec<Vec<u8>> = vec![vec![0u8; 40], (0..2000).map(|i| i as u8).collect()];
        let cases = [
            (Kind::Abridged, false),
            (Kind::Intermediate, false),
            (Kind::PaddedIntermediate, false),
            (Kind::Full, false),
            (Kind::Abridged, true),
            (Kind::Intermediate, true),
            (Kind::PaddedIntermediate, true),
        ];
        for (kind, obfuscated) in cases {
            let (wire, client) = client_stream(kind, obfuscated, &packets);
            let mut server = ServerTransport::new();
            let mut got = Vec::new();
            for chunk in wire.chunks(7) {
                server.feed(chunk).unwrap();
                while let Some(p) = server.next_packet().unwrap() {
                    got.push(p);
                }
            }
            assert_eq!(server.kind(), Some((kind, obfuscated)));
            assert_eq!(got.len(), 2, "{kind:?} {obfuscated}");
            for (g, p) in got.iter().zip(&packets) {
                assert_eq!(&g[..p.len()], &p[..]);
            }
            // And back: the client reads our frame.
            let mut reply = server.encode(&[9, 9, 9, 9]);
            if let Some(mut c) = client {
                c.decrypt(&mut reply);
            }
            let mut f = Framing::new(kind);
            let frame = f.decode(&mut reply).unwrap().unwrap();
            assert_eq!(&frame[..4], &[9, 9, 9, 9]);
        }
    }

    #[test]
    fn garbage_headers_are_refused() {
        let mut server = ServerTransport::new();
        let junk: Vec<u8> = (1..=64).collect();
        assert_eq!(server.feed(&junk), Err(TransportError::UnknownProtocol));
    }
}
