//! The server's RSA key file: read if present, else created (with its folder) on first start.

use std::path::Path;

use anyhow::Context;
use mtproto::crypto::ServerKey;

pub fn load_or_create(path: &Path) -> anyhow::Result<ServerKey> {
    if path.exists() {
        let pem = std::fs::read_to_string(path)
            .with_context(|| format!("reading the MTProto key {}", path.display()))?;
        return ServerKey::from_pem(&pem)
            .with_context(|| format!("parsing the MTProto key {}", path.display()));
    }
    let key = ServerKey::generate()?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the data folder {}", dir.display()))?;
    }
    let pem = key.private_pem()?;
    write_private(path, &pem)
        .with_context(|| format!("writing the MTProto key {}", path.display()))?;
    tracing::info!(path = %path.display(), "created the MTProto server key");
    Ok(key)
}

#[cfg(unix)]
fn write_private(path: &Path, pem: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(pem.as_bytes())
}

#[cfg(not(unix))]
fn write_private(path: &Path, pem: &str) -> std::io::Result<()> {
    std::fs::write(path, pem)
}
