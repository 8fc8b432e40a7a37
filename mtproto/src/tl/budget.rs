//! What one client message may expand to while it is decoded: bytes inflated from `gzip_packed`
//! (summed over every nesting level and every call of a container), TL values built, and
//! nesting depth. One [`DecodeBudget`] is made per received message and charged by everything
//! that unwraps or decodes it (the session's container and gzip unwrapping, the call's TL to
//! JSON decoding), while decoding: a bomb is refused at the byte or value that goes over, never
//! after it was built.

use std::io::Read;

use flate2::read::GzDecoder;

use super::{Reader, TlError, GZIP_PACKED};

/// Bytes all the `gzip_packed` objects of one message may inflate to, together. The largest
/// request a client sends is a 512 KiB file part inside one transport frame
/// ([`crate::MAX_FRAME`], 1 MiB); twice a frame leaves room for a container of gzip-packed calls
/// of that size, while several attackers decoding at once stay a few MiB each.
pub const MAX_INFLATED_BYTES: usize = 2 * crate::MAX_FRAME;

/// TL values (objects, their constructor names, fields, vector items, flag booleans) one message
/// may decode to. The largest real request is `contacts.importContacts` with
/// `domain::limits::MAX_IMPORT_CONTACTS` (1000) contacts of 6 values each; 16 384 leaves headroom
/// and caps the JSON built from one message at ~6 MB (an object costs a few hundred bytes).
pub const MAX_VALUES: usize = 1 << 14;

/// Nesting depth of TL values (a request is ~15 deep: invokeWithLayer, initConnection and its
/// JSONValue params, the call, its input objects); also bounds recursion on the stack.
pub const MAX_DEPTH: usize = 64;

/// The budget left for one message (`Copy`: a decoder charges it as it goes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeBudget {
    inflated_left: usize,
    values_left: usize,
    max_depth: usize,
}

impl Default for DecodeBudget {
    fn default() -> Self {
        Self::new(MAX_INFLATED_BYTES, MAX_VALUES, MAX_DEPTH)
    }
}

impl DecodeBudget {
    /// A budget with these limits (tests use small ones; [`Default`] is one message's).
    pub fn new(inflated: usize, values: usize, depth: usize) -> Self {
        Self {
            inflated_left: inflated,
            values_left: values,
            max_depth: depth,
        }
    }

    pub fn inflated_left(&self) -> usize {
        self.inflated_left
    }

    pub fn values_left(&self) -> usize {
        self.values_left
    }

    /// Refuses `depth` past the limit.
    pub fn depth(&self, depth: usize) -> Result<(), TlError> {
        if depth > self.max_depth {
            return Err(TlError::TooDeep);
        }
        Ok(())
    }

    /// Charges `n` decoded values.
    pub fn values(&mut self, n: usize) -> Result<(), TlError> {
        self.values_left = self
            .values_left
            .checked_sub(n)
            .ok_or(TlError::OverBudget("too many values"))?;
        Ok(())
    }

    /// A vector announcing `n` items: refused at once when even one value each cannot fit, and
    /// answers the capacity to reserve (never more than the budget allows, whatever the wire
    /// says). The items charge themselves as they are decoded.
    pub fn items(&self, n: usize) -> Result<usize, TlError> {
        if n > self.values_left {
            return Err(TlError::OverBudget("vector longer than the value budget"));
        }
        Ok(n)
    }

    /// Inflates a `gzip_packed` payload, charging every inflated byte; refuses the byte that goes
    /// over. When the payload is itself a `gzip_packed` object (a client has no reason to pack
    /// twice; a bomb does), that is inflated in turn and the outer buffer freed first, so only
    /// one level's buffer is alive once the next has been read; such levels count as depth.
    pub fn gunzip(&mut self, data: &[u8]) -> Result<Vec<u8>, TlError> {
        let mut out = self.inflate_one(data)?;
        let mut levels = 1;
        while out.len() >= 4 && out[..4] == GZIP_PACKED.to_le_bytes() {
            levels += 1;
            self.depth(levels)?;
            let next = {
                let mut r = Reader::new(&out[4..]);
                self.inflate_one(r.bytes()?)?
            };
            out = next;
        }
        Ok(out)
    }

    fn inflate_one(&mut self, data: &[u8]) -> Result<Vec<u8>, TlError> {
        // Each level is a value too: a vector of many tiny gzip_packed items is bounded by it.
        self.values(1)?;
        let bad = |_| TlError::Invalid("bad gzip_packed data");
        let mut gz = GzDecoder::new(data).take(self.inflated_left as u64 + 1);
        let mut out = Vec::new();
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = gz.read(&mut chunk).map_err(bad)?;
            if n == 0 {
                break;
            }
            if out.len() + n > self.inflated_left {
                return Err(TlError::OverBudget("gzip_packed inflates past the budget"));
            }
            out.extend_from_slice(&chunk[..n]);
        }
        self.inflated_left -= out.len();
        out.shrink_to_fit();
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use flate2::write::GzEncoder;
    use flate2::Compression;

    use super::*;
    use crate::tl::Writer;

    fn gz(data: &[u8]) -> Vec<u8> {
        let mut e = GzEncoder::new(Vec::new(), Compression::best());
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    fn packed(data: &[u8]) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(GZIP_PACKED).bytes(&gz(data));
        w.buf
    }

    #[test]
    fn inflated_bytes_at_the_limit_pass_and_one_past_is_refused() {
        let data = vec![7u8; MAX_INFLATED_BYTES];
        let mut b = DecodeBudget::default();
        assert_eq!(b.gunzip(&gz(&data)).unwrap().len(), MAX_INFLATED_BYTES);
        assert_eq!(b.inflated_left(), 0);
        let over = vec![7u8; MAX_INFLATED_BYTES + 1];
        assert_eq!(
            DecodeBudget::default().gunzip(&gz(&over)),
            Err(TlError::OverBudget("gzip_packed inflates past the budget"))
        );
    }

    #[test]
    fn nested_levels_share_one_budget() {
        // Each level is small, but together they are over: 3 levels of 400 KiB + wrappers.
        let mut inner = vec![1u8; 400 << 10];
        for _ in 0..2 {
            let mut level = packed(&inner);
            level.resize(400 << 10, 0);
            inner = level;
        }
        let mut b = DecodeBudget::new(1 << 20, MAX_VALUES, MAX_DEPTH);
        assert!(matches!(b.gunzip(&gz(&inner)), Err(TlError::OverBudget(_))));
        let mut b = DecodeBudget::new(3 * (400 << 10), MAX_VALUES, MAX_DEPTH);
        assert_eq!(b.gunzip(&gz(&inner)).unwrap(), vec![1u8; 400 << 10]);
    }

    #[test]
    fn a_chain_of_gzip_levels_counts_as_depth() {
        let chain = |levels: usize| {
            let mut data = BOOL_TRUE_BYTES.to_vec();
            for _ in 1..levels {
                data = packed(&data);
            }
            gz(&data)
        };
        let mut b = DecodeBudget::default();
        assert_eq!(b.gunzip(&chain(MAX_DEPTH)).unwrap(), BOOL_TRUE_BYTES);
        assert_eq!(b.values_left(), MAX_VALUES - MAX_DEPTH);
        assert_eq!(
            DecodeBudget::default().gunzip(&chain(MAX_DEPTH + 1)),
            Err(TlError::TooDeep)
        );
    }

    const BOOL_TRUE_BYTES: [u8; 4] = crate::tl::BOOL_TRUE.to_le_bytes();

    #[test]
    fn values_and_vectors_at_the_limit_pass_and_one_past_is_refused() {
        let mut b = DecodeBudget::default();
        assert_eq!(b.items(MAX_VALUES), Ok(MAX_VALUES));
        assert!(b.items(MAX_VALUES + 1).is_err());
        b.values(MAX_VALUES).unwrap();
        assert_eq!(b.values_left(), 0);
        assert!(b.values(1).is_err());
        assert!(b.depth(MAX_DEPTH).is_ok());
        assert_eq!(b.depth(MAX_DEPTH + 1), Err(TlError::TooDeep));
    }

    #[test]
    fn garbage_is_bad_gzip_not_a_panic() {
        let mut b = DecodeBudget::default();
        assert_eq!(
            b.gunzip(&[1, 2, 3, 4]),
            Err(TlError::Invalid("bad gzip_packed data"))
        );
    }
}
