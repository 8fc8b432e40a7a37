/// Writes TL primitives.
#[derive(Debug, Clone, Default)]
pub struct Writer {
    pub buf: Vec<u8>,
}

impl Writer {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn into_inner(self) -> Vec<u8> {
        self.buf
    }

    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn f64(&mut self, v: f64) -> &mut Self {
        self.buf.extend_from_slice(&v.to_le_bytes());
        self
    }

    pub fn raw(&mut self, v: &[u8]) -> &mut Self {
        self.buf.extend_from_slice(v);
        self
    }

    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.u32(if v {
            super::BOOL_TRUE
        } else {
            super::BOOL_FALSE
        })
    }

    /// `bytes` / `string` (lengths past 2^24 cannot be expressed; they are cut, which no caller
    /// reaches since frames are far smaller).
    pub fn bytes(&mut self, v: &[u8]) -> &mut Self {
        let len = v.len().min(0xff_ffff);
        let header = if len < 254 {
            self.buf.push(len as u8);
            1
        } else {
            self.buf
                .extend_from_slice(&[254, len as u8, (len >> 8) as u8, (len >> 16) as u8]);
            4
        };
        self.buf.extend_from_slice(&v[..len]);
        let pad = (4 - (header + len) % 4) % 4;
        self.buf.extend(std::iter::repeat_n(0, pad));
        self
    }

    pub fn vec_i64(&mut self, v: &[i64]) -> &mut Self {
        self.u32(super::VECTOR).i32(v.len() as i32);
        for x in v {
            self.i64(*x);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::super::Reader;
    use super::*;

    #[test]
    fn bytes_round_trip_short_and_long() {
        for len in [0usize, 1, 3, 4, 253, 254, 255, 1000, 70000] {
            let data: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let mut w = Writer::new();
            w.bytes(&data).i32(7);
            assert_eq!(w.buf.len() % 4, 0);
            let mut r = Reader::new(&w.buf);
            assert_eq!(r.bytes().unwrap(), &data[..]);
            assert_eq!(r.i32().unwrap(), 7);
        }
    }

    #[test]
    fn truncated_input_is_an_error() {
        let mut w = Writer::new();
        w.bytes(&[1u8; 300]);
        for cut in 0..w.buf.len() {
            let mut r = Reader::new(&w.buf[..cut]);
            assert!(r.bytes().is_err());
        }
        let mut r = Reader::new(&[0x15, 0xc4, 0xb5, 0x1c, 0xff, 0xff, 0xff, 0x7f]);
        assert!(r.vec_i64().is_err());
    }
}
