/// A TL value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TlError {
    #[error("unexpected end of data")]
    Eof,
    #[error("unknown constructor {0:#010x}")]
    UnknownConstructor(u32),
    #[error("unexpected constructor {got:#010x}, expected {expected}")]
    Unexpected { got: u32, expected: &'static str },
    #[error("{0}")]
    Invalid(&'static str),
    #[error("nesting too deep")]
    TooDeep,
    /// The message's [`super::DecodeBudget`] ran out (inflated bytes or values).
    #[error("decoding budget exceeded: {0}")]
    OverBudget(&'static str),
}

/// Reads TL primitives from a byte slice; every read checks bounds.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Self { buf, pos: 0 }
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], TlError> {
        let end = self.pos.checked_add(n).ok_or(TlError::Eof)?;
        let out = self.buf.get(self.pos..end).ok_or(TlError::Eof)?;
        self.pos = end;
        Ok(out)
    }

    pub fn array<const N: usize>(&mut self) -> Result<[u8; N], TlError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    pub fn u32(&mut self) -> Result<u32, TlError> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    pub fn i32(&mut self) -> Result<i32, TlError> {
        Ok(i32::from_le_bytes(self.array()?))
    }

    pub fn i64(&mut self) -> Result<i64, TlError> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    pub fn f64(&mut self) -> Result<f64, TlError> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// `bytes` / `string`: a 1-byte length (or 254 and a 3-byte length), the data, padding to 4.
    pub fn bytes(&mut self) -> Result<&'a [u8], TlError> {
        let first = self.take(1)?[0];
        let (len, header) = if first == 254 {
            let b = self.take(3)?;
            (
                usize::from(b[0]) | usize::from(b[1]) << 8 | usize::from(b[2]) << 16,
                4,
            )
        } else if first == 255 {
            return Err(TlError::Invalid("bytes length marker 255"));
        } else {
            (usize::from(first), 1)
        };
        let data = self.take(len)?;
        let pad = (4 - (header + len) % 4) % 4;
        self.take(pad)?;
        Ok(data)
    }

    pub fn string(&mut self) -> Result<String, TlError> {
        // Clients send valid UTF-8; a stray invalid byte is replaced rather than failing the call.
        Ok(String::from_utf8_lossy(self.bytes()?).into_owned())
    }

    pub fn bool(&mut self) -> Result<bool, TlError> {
        match self.u32()? {
            super::BOOL_TRUE => Ok(true),
            super::BOOL_FALSE => Ok(false),
            got => Err(TlError::Unexpected {
                got,
                expected: "Bool",
            }),
        }
    }

    /// A boxed `Vector<long>`.
    pub fn vec_i64(&mut self) -> Result<Vec<i64>, TlError> {
        let id = self.u32()?;
        if id != super::VECTOR {
            return Err(TlError::Unexpected {
                got: id,
                expected: "Vector",
            });
        }
        let n = self.count(8)?;
        (0..n).map(|_| self.i64()).collect()
    }

    /// A vector's element count, refused when the data left cannot hold that many elements of at
    /// least `min_size` bytes (so a forged count cannot make us allocate gigabytes).
    pub fn count(&mut self, min_size: usize) -> Result<usize, TlError> {
        let n = self.i32()?;
        let n = usize::try_from(n).map_err(|_| TlError::Invalid("negative vector length"))?;
        if n.saturating_mul(min_size.max(1)) > self.buf.len() - self.pos {
            return Err(TlError::Eof);
        }
        Ok(n)
    }
}
