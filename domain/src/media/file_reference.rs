//! `file_reference`: the short-lived token every photo and document carries when the server shows
//! it. A download must present one the server issued within [`FILE_REFERENCE_LIFETIME_SECS`]; an
//! older one is `FILE_REFERENCE_EXPIRED`, and the client gets a fresh one by fetching the message
//! again (Telegram's contract). It says nothing about who may download: that is checked apart.

use sha2::{Digest, Sha256};

use super::limits::FILE_REFERENCE_LIFETIME_SECS;
use super::MediaId;
use crate::access_hash::AccessHashKey;

const VERSION: u8 = 1;
const MAC_BYTES: usize = 15;
/// A reference: version, issue time (big-endian seconds), MAC.
pub const FILE_REFERENCE_BYTES: usize = 1 + 4 + MAC_BYTES;
/// Clocks of instances may differ a little: a reference "issued" this far ahead is still good.
const CLOCK_SKEW_SECS: i32 = 300;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileReferenceError {
    /// Issued by this server but too long ago (or not readable as one of ours).
    Expired,
}

fn mac(key: &AccessHashKey, media: MediaId, issued: i32) -> [u8; MAC_BYTES] {
    let digest = Sha256::new()
        .chain_update(key.secret())
        .chain_update(b"ptslog file_reference")
        .chain_update(media.get().to_le_bytes())
        .chain_update(issued.to_le_bytes())
        .finalize();
    let mut out = [0u8; MAC_BYTES];
    out.copy_from_slice(&digest[..MAC_BYTES]);
    out
}

/// The reference to show with `media` at `now`.
pub fn issue(key: &AccessHashKey, media: MediaId, now: i32) -> Vec<u8> {
    let mut out = Vec::with_capacity(FILE_REFERENCE_BYTES);
    out.push(VERSION);
    out.extend_from_slice(&now.to_be_bytes());
    out.extend_from_slice(&mac(key, media, now));
    out
}

/// Checks a presented reference for `media` at `now`. Anything that is not a reference this
/// server issued for this media, or one past its lifetime, is `Expired`: the client's remedy is
/// the same (fetch the message again), and a client that never saw the message gets no further.
pub fn check(
    key: &AccessHashKey,
    media: MediaId,
    presented: &[u8],
    now: i32,
) -> Result<(), FileReferenceError> {
    if presented.len() != FILE_REFERENCE_BYTES || presented[0] != VERSION {
        return Err(FileReferenceError::Expired);
    }
    let issued = i32::from_be_bytes([presented[1], presented[2], presented[3], presented[4]]);
    // Not constant-time: the MAC is over public data and gives no access by itself.
    if presented[5..] != mac(key, media, issued) {
        return Err(FileReferenceError::Expired);
    }
    let age = i64::from(now) - i64::from(issued);
    if age > i64::from(FILE_REFERENCE_LIFETIME_SECS) || age < -i64::from(CLOCK_SKEW_SECS) {
        return Err(FileReferenceError::Expired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reference_is_good_for_its_lifetime_and_for_its_media_only() {
        let key = AccessHashKey::new(b"k".to_vec());
        let m = MediaId::new(5).unwrap();
        let r = issue(&key, m, 1000);
        assert_eq!(r.len(), FILE_REFERENCE_BYTES);
        assert_eq!(check(&key, m, &r, 1000), Ok(()));
        assert_eq!(
            check(&key, m, &r, 1000 + FILE_REFERENCE_LIFETIME_SECS),
            Ok(())
        );
        assert_eq!(
            check(&key, m, &r, 1001 + FILE_REFERENCE_LIFETIME_SECS),
            Err(FileReferenceError::Expired)
        );
        assert_eq!(
            check(&key, MediaId::new(6).unwrap(), &r, 1000),
            Err(FileReferenceError::Expired)
        );
        assert_eq!(
            check(&AccessHashKey::new(b"other".to_vec()), m, &r, 1000),
            Err(FileReferenceError::Expired)
        );
        let mut forged = r.clone();
        forged[4] ^= 1;
        assert_eq!(
            check(&key, m, &forged, 1000),
            Err(FileReferenceError::Expired)
        );
        assert_eq!(check(&key, m, &[], 1000), Err(FileReferenceError::Expired));
        assert_eq!(check(&key, m, &r, 1000 - CLOCK_SKEW_SECS), Ok(()));
        assert!(check(&key, m, &r, 999 - CLOCK_SKEW_SECS).is_err());
    }
}
