//! Access hashes: the proof that a viewer learned a user id legitimately. A hash is a keyed digest of
//! (viewer, target), so it differs per viewer and cannot be guessed without the server key.

use sha2::{Digest, Sha256};

use crate::ids::UserId;

/// The server-wide key (shared by every instance through the database).
#[derive(Clone)]
pub struct AccessHashKey(Vec<u8>);

impl AccessHashKey {
    pub fn new(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// The access hash `viewer` must present to name `target`.
    pub fn for_pair(&self, viewer: UserId, target: UserId) -> i64 {
        let mut h = Sha256::new();
        h.update(&self.0);
        h.update(viewer.get().to_le_bytes());
        h.update(target.get().to_le_bytes());
        let digest = h.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        i64::from_le_bytes(first)
    }

    /// The key's bytes, for other keyed digests of this server (media file references).
    pub(crate) fn secret(&self) -> &[u8] {
        &self.0
    }

    pub fn verify(&self, viewer: UserId, target: UserId, presented: i64) -> bool {
        self.for_pair(viewer, target) == presented
    }
}

impl std::fmt::Debug for AccessHashKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AccessHashKey(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_depends_on_viewer_and_key() {
        let key = AccessHashKey::new(b"k1".to_vec());
        let a = UserId::new(1).unwrap();
        let b = UserId::new(2).unwrap();
        let c = UserId::new(3).unwrap();
        assert!(key.verify(a, b, key.for_pair(a, b)));
        assert_ne!(key.for_pair(a, b), key.for_pair(c, b));
        assert_ne!(
            key.for_pair(a, b),
            AccessHashKey::new(b"k2".to_vec()).for_pair(a, b)
        );
    }
}
