//! The key-encryption key that seals MTProto auth keys in Postgres (docs/security.md, "TLS and
//! secrets at rest"): from `PTSLOG_MTPROTO_KEY_ENCRYPTION_KEY` when the operator gives one (a
//! secret store, kept apart from the database), else a file under the data folder created on first
//! start, like the RSA key.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use base64::Engine;
use infrastructure::postgres::auth_key_cipher::KEY_ENCRYPTION_KEY_BYTES;
use infrastructure::AuthKeyCipher;
use rand::RngCore;

type KeyBytes = [u8; KEY_ENCRYPTION_KEY_BYTES];

/// Where the key-encryption key comes from. Debug never shows a key.
#[derive(Clone, PartialEq, Eq)]
pub enum KeyEncryptionKeySource {
    Inline(KeyBytes),
    File(PathBuf),
}

impl std::fmt::Debug for KeyEncryptionKeySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Inline(_) => f.write_str("Inline(<secret>)"),
            Self::File(p) => f.debug_tuple("File").field(p).finish(),
        }
    }
}

/// The default file name under the data folder.
pub const DEFAULT_KEY_FILE: &str = "mtproto_auth_key_encryption.key";

/// 32 bytes as 64 hex digits or as base64 (standard alphabet, padded or not).
pub fn parse_key(text: &str) -> anyhow::Result<KeyBytes> {
    let text = text.trim();
    let bytes = if text.len() == 2 * KEY_ENCRYPTION_KEY_BYTES
        && text.bytes().all(|b| b.is_ascii_hexdigit())
    {
        hex::decode(text).ok()
    } else {
        base64::engine::general_purpose::STANDARD
            .decode(text)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(text))
            .ok()
    };
    bytes
        .and_then(|b| KeyBytes::try_from(b).ok())
        .ok_or_else(|| {
            anyhow!("expected {KEY_ENCRYPTION_KEY_BYTES} bytes as 64 hex digits or base64")
        })
}

impl KeyEncryptionKeySource {
    pub fn from_vars(
        inline: Option<&str>,
        file: Option<&str>,
        data_dir: &Path,
    ) -> anyhow::Result<Self> {
        match (inline, file) {
            (Some(_), Some(_)) => Err(anyhow!(
                "set PTSLOG_MTPROTO_KEY_ENCRYPTION_KEY or PTSLOG_MTPROTO_KEY_ENCRYPTION_KEY_FILE, not both"
            )),
            (Some(k), None) => Ok(Self::Inline(
                parse_key(k).context("PTSLOG_MTPROTO_KEY_ENCRYPTION_KEY")?,
            )),
            (None, Some(f)) => Ok(Self::File(f.into())),
            (None, None) => Ok(Self::File(data_dir.join(DEFAULT_KEY_FILE))),
        }
    }

    /// The cipher; a missing key file is created (mode 0600, 64 hex digits from the OS CSPRNG).
    pub fn cipher(&self) -> anyhow::Result<AuthKeyCipher> {
        let key = match self {
            Self::Inline(k) => *k,
            Self::File(path) => load_or_create(path)?,
        };
        Ok(AuthKeyCipher::new(&key))
    }
}

fn load_or_create(path: &Path) -> anyhow::Result<KeyBytes> {
    let read = |path: &Path| -> anyhow::Result<KeyBytes> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading the auth key encryption key {}", path.display()))?;
        parse_key(&text).with_context(|| format!("the key file {}", path.display()))
    };
    if path.exists() {
        return read(path);
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the data folder {}", dir.display()))?;
    }
    let mut key = [0u8; KEY_ENCRYPTION_KEY_BYTES];
    rand::rngs::OsRng.fill_bytes(&mut key);
    match write_new(path, &hex::encode(key)) {
        Ok(()) => {
            tracing::info!(path = %path.display(), "created the MTProto auth key encryption key");
            Ok(key)
        }
        // Another process sharing the data folder made it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read(path),
        Err(e) => Err(e).with_context(|| format!("writing the key file {}", path.display())),
    }
}

#[cfg(unix)]
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()
}

#[cfg(not(unix))]
fn write_new(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_from_hex_or_base64_only_at_32_bytes() {
        let hex64 = "00".repeat(31) + "ff";
        assert_eq!(parse_key(&hex64).unwrap()[31], 0xff);
        let b64 = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        assert_eq!(parse_key(&b64).unwrap(), [7u8; 32]);
        assert_eq!(parse_key(b64.trim_end_matches('=')).unwrap(), [7u8; 32]);
        assert!(parse_key(&"00".repeat(31)).is_err(), "31 bytes");
        let b64_33 = base64::engine::general_purpose::STANDARD.encode([7u8; 33]);
        assert!(parse_key(&b64_33).is_err(), "33 bytes");
        assert!(parse_key("not a key").is_err());
    }

    #[test]
    fn sources_and_the_created_file() {
        let dir = std::env::temp_dir().join(format!("ptslog-kek-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let s = KeyEncryptionKeySource::from_vars(None, None, &dir).unwrap();
        assert_eq!(s, KeyEncryptionKeySource::File(dir.join(DEFAULT_KEY_FILE)));
        let first = s.cipher().unwrap();
        let sealed = first.seal(5, &[1u8; 256]).unwrap();
        // The second start reads the same key back.
        assert!(s.cipher().unwrap().open(5, &sealed).is_ok());
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.join(DEFAULT_KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let inline = KeyEncryptionKeySource::from_vars(Some(&"ab".repeat(32)), None, &dir).unwrap();
        assert!(!format!("{inline:?}").contains("abab"));
        assert!(
            inline.cipher().unwrap().open(5, &sealed).is_err(),
            "another key"
        );
        assert!(KeyEncryptionKeySource::from_vars(Some("short"), None, &dir).is_err());
        assert!(
            KeyEncryptionKeySource::from_vars(Some(&"ab".repeat(32)), Some("f"), &dir).is_err()
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
