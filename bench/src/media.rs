//! The media phase (issue 12): upload and download MB/s through MTProto and through HTTP against
//! the same run's raw ceiling of the store (the same bytes, sizes, chunking and concurrency
//! written + fsync'ed and read back directly on the same disk; for S3, PUT and ranged GET of the
//! same bytes straight to the S3 server), the server's memory per concurrent download, and photos
//! processed per second through sendMedia against the processor called directly.
//!
//! It runs on a database and in-process servers of its own (one per blob store), so its sends
//! never touch the main phases' correctness counts. Every transfer is checked byte for byte.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use application::media::PhotoProcessor;
use futures::future::try_join_all;
use mtproto::crypto::{AuthKey, PublicKey};
use mtproto::tl::{Reader, Writer, BOOL_TRUE};
use object_store::{ObjectStore, ObjectStoreExt};
use rand::{Rng, RngCore};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::mtclient::{constructor, Conn, Session};
use crate::report::{Phase, Ratio};
use crate::setup::{self, BenchUser};
use crate::stats::{round1, round3};

/// Upload parts: the largest Telegram allows (`MAX_PART_BYTES`), as clients send big files.
pub const PART_BYTES: usize = 512 * 1024;
/// Download chunks: the largest upload.getFile allows (`MAX_DOWNLOAD_LIMIT`).
pub const CHUNK_BYTES: usize = 1024 * 1024;
/// MTProto download chunks: 512 KiB, as Telethon and TDesktop ask; the spec client's framing
/// refuses frames over 1 MiB, which a 1 MiB answer with its envelope is.
pub const MT_CHUNK_BYTES: usize = 512 * 1024;
const MIB: f64 = 1024.0 * 1024.0;
/// The region of docs/performance.md the media figures are written into.
pub const BEGIN_MARKER: &str = "<!-- media:begin -->";
pub const END_MARKER: &str = "<!-- media:end -->";

#[derive(Debug, Clone)]
pub struct MediaOptions {
    /// Bytes of each transferred file.
    pub file_bytes: usize,
    /// Concurrent transfers (each on an account and a connection of its own).
    pub concurrency: usize,
    /// Files each transfer moves, one after the other.
    pub files_per_worker: usize,
    /// Slow downloads held open together for the memory figure.
    pub slow_downloads: usize,
    /// Photos sent (and processed directly) for the photo figure, their size and concurrency.
    pub photos: usize,
    pub photo_size: (u32, u32),
    pub photo_concurrency: usize,
    pub admin_url: String,
    pub redis_url: String,
    /// Blobs, raw files and server data go under this folder (the disk measured).
    pub work_dir: PathBuf,
    pub keep_db: bool,
    pub verbose: bool,
}

impl MediaOptions {
    /// About a minute on 2 cores.
    pub fn full(admin_url: &str, redis_url: &str, work_dir: &Path) -> Self {
        Self {
            file_bytes: 8 * 1024 * 1024,
            concurrency: 4,
            files_per_worker: 2,
            slow_downloads: 32,
            photos: 24,
            photo_size: (1280, 960),
            photo_concurrency: 2,
            admin_url: admin_url.to_string(),
            redis_url: redis_url.to_string(),
            work_dir: work_dir.to_path_buf(),
            keep_db: false,
            verbose: true,
        }
    }

    /// Seconds: the smoke run (three parts per file, the last one short).
    pub fn quick(admin_url: &str, redis_url: &str, work_dir: &Path) -> Self {
        Self {
            file_bytes: 2 * PART_BYTES + 4097,
            concurrency: 2,
            files_per_worker: 1,
            slow_downloads: 4,
            photos: 4,
            photo_size: (320, 240),
            ..Self::full(admin_url, redis_url, work_dir)
        }
    }
}

/// One transfer figure: ptslog's rate and the raw rate of the same bytes.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Transfer {
    pub store: String,
    /// `upload` or `download`.
    pub direction: String,
    /// `http` or `mtproto`.
    pub front: String,
    pub mb_per_s: f64,
    pub raw_mb_per_s: f64,
    pub ratio: f64,
    pub bytes: u64,
    pub seconds: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Memory {
    pub front: String,
    pub downloads: usize,
    pub rss_idle_mib: f64,
    pub rss_loaded_mib: f64,
    pub per_download_kib: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Photos {
    pub photos: usize,
    pub width: u32,
    pub height: u32,
    pub concurrency: usize,
    pub send_media_per_s: f64,
    pub direct_per_s: f64,
    pub ratio: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MediaFigures {
    pub file_bytes: usize,
    pub concurrency: usize,
    pub files_per_worker: usize,
    /// Whether the S3 store was measured (PTSLOG_TEST_S3_* set), and why not.
    pub s3: String,
    pub transfers: Vec<Transfer>,
    pub memory: Vec<Memory>,
    pub photos: Option<Photos>,
    pub wall_s: f64,
}

impl MediaFigures {
    /// The phase of the main report (its figures are the parameters).
    pub fn phase(&self) -> Phase {
        let mut p = Phase::new(
            "media",
            "media",
            serde_json::to_value(self).unwrap_or_default(),
        );
        p.note = Some(self.summary());
        p.wall_s = self.wall_s;
        p
    }

    pub fn ratios(&self) -> Vec<Ratio> {
        let mut out: Vec<Ratio> = self
            .transfers
            .iter()
            .map(|t| Ratio {
                name: format!("media {} {} {} / raw", t.front, t.direction, t.store),
                value: t.ratio,
                numerator: t.mb_per_s,
                denominator: t.raw_mb_per_s,
            })
            .collect();
        if let Some(p) = &self.photos {
            out.push(Ratio {
                name: "media photos sendMedia / direct processing".into(),
                value: p.ratio,
                numerator: p.send_media_per_s,
                denominator: p.direct_per_s,
            });
        }
        out
    }

    fn summary(&self) -> String {
        let t: Vec<String> = self
            .transfers
            .iter()
            .map(|t| {
                format!(
                    "{} {} {} {:.0} MB/s ({:.2} of raw)",
                    t.front, t.direction, t.store, t.mb_per_s, t.ratio
                )
            })
            .collect();
        t.join("; ")
    }

    pub fn markdown(&self, started_at: &str, quick: bool) -> String {
        let mut s = format!(
            "Run {started_at} ({}): {} files of {:.2} MiB, {} at a time ({} each), parts of 512 KiB, \
             HTTP downloads streamed, MTProto getFile in 512 KiB chunks; S3: {}. Wall time {:.0} s. MB/s are MiB/s.\n\n",
            if quick { "quick" } else { "full" },
            self.concurrency * self.files_per_worker,
            self.file_bytes as f64 / MIB,
            self.concurrency,
            self.files_per_worker,
            self.s3,
            self.wall_s
        );
        s.push_str("| store | direction | front | MB/s | raw MB/s (same run) | ratio |\n|---|---|---|---:|---:|---:|\n");
        for t in &self.transfers {
            s.push_str(&format!(
                "| {} | {} | {} | {:.1} | {:.1} | {:.3} |\n",
                t.store, t.direction, t.front, t.mb_per_s, t.raw_mb_per_s, t.ratio
            ));
        }
        s.push_str("\n| concurrent slow downloads | front | RSS idle MiB | RSS with them MiB | per download KiB |\n|---:|---|---:|---:|---:|\n");
        for m in &self.memory {
            s.push_str(&format!(
                "| {} | {} | {:.1} | {:.1} | {:.0} |\n",
                m.downloads, m.front, m.rss_idle_mib, m.rss_loaded_mib, m.per_download_kib
            ));
        }
        if let Some(p) = &self.photos {
            s.push_str(&format!(
                "\n| photos | size | concurrency | sendMedia photos/s | processor alone photos/s | ratio |\n|---:|---|---:|---:|---:|---:|\n\
                 | {} | {}×{} | {} | {:.1} | {:.1} | {:.2} |\n",
                p.photos, p.width, p.height, p.concurrency, p.send_media_per_s, p.direct_per_s, p.ratio
            ));
        }
        s
    }

    /// Replaces the media region of `path` with the figures (a document without one is left).
    pub fn write_markdown(&self, path: &Path, started_at: &str, quick: bool) -> anyhow::Result<()> {
        let doc =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        if !doc.lines().any(|l| l.trim_end() == BEGIN_MARKER) {
            return Ok(());
        }
        let new = crate::report::replace_marked(
            &doc,
            BEGIN_MARKER,
            END_MARKER,
            &self.markdown(started_at, quick),
        )?;
        std::fs::write(path, new).with_context(|| format!("writing {}", path.display()))
    }
}

fn log(opts: &MediaOptions, line: impl AsRef<str>) {
    if opts.verbose {
        println!("{}", line.as_ref());
    }
}

/// The S3 server of the test scripts (scripts/lib/services.sh start_s3), when its env is set.
#[derive(Debug, Clone)]
struct S3Env {
    endpoint: String,
    bucket: String,
    access_key: String,
    secret_key: String,
}

impl S3Env {
    fn from_env() -> Option<Self> {
        let get = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Some(Self {
            endpoint: get("PTSLOG_TEST_S3_ENDPOINT")?,
            bucket: get("PTSLOG_TEST_S3_BUCKET")?,
            access_key: get("PTSLOG_TEST_S3_ACCESS_KEY")?,
            secret_key: get("PTSLOG_TEST_S3_SECRET_KEY")?,
        })
    }

    fn vars(&self, prefix: &str) -> Vec<(String, String)> {
        [
            ("PTSLOG_BLOB_STORE", "s3"),
            ("PTSLOG_S3_ENDPOINT", self.endpoint.as_str()),
            ("PTSLOG_S3_BUCKET", self.bucket.as_str()),
            ("PTSLOG_S3_ACCESS_KEY_ID", self.access_key.as_str()),
            ("PTSLOG_S3_SECRET_ACCESS_KEY", self.secret_key.as_str()),
            ("PTSLOG_S3_PREFIX", prefix),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
    }

    fn client(&self) -> anyhow::Result<object_store::aws::AmazonS3> {
        Ok(object_store::aws::AmazonS3Builder::new()
            .with_bucket_name(&self.bucket)
            .with_region("us-east-1")
            .with_access_key_id(&self.access_key)
            .with_secret_access_key(&self.secret_key)
            .with_endpoint(&self.endpoint)
            .with_virtual_hosted_style_request(false)
            .with_allow_http(true)
            .build()?)
    }
}

/// A server on the media database with one blob store, both fronts on.
struct Server {
    running: ptslog_server::Running,
    base: String,
    mt_port: u16,
    key: PublicKey,
    store: String,
}

async fn start_server(
    opts: &MediaOptions,
    db_url: &str,
    db_name: &str,
    store: &str,
    vars: Vec<(String, String)>,
) -> anyhow::Result<Server> {
    let data_dir = opts.work_dir.join(format!("media-{store}"));
    std::fs::create_dir_all(&data_dir)?;
    let mut vars = vars;
    vars.push(("PTSLOG_DATA_DIR".into(), data_dir.display().to_string()));
    vars.push(("PTSLOG_MTPROTO_ADDR".into(), "127.0.0.1:0".into()));
    // Every slow download of the memory figure is one account's call in flight.
    vars.push((
        "PTSLOG_ACCOUNT_MAX_CONCURRENT_REQUESTS".into(),
        "1000".into(),
    ));
    let config = setup::server_config_with(db_url, &opts.redis_url, db_name, 16, &vars)?;
    let mut running = ptslog_server::start(&config)
        .await
        .with_context(|| format!("starting the {store} server"))?;
    let mt_port = running
        .start_mtproto(&config)
        .await?
        .ok_or_else(|| anyhow!("the MTProto front is off"))?
        .port();
    let info = running
        .mtproto_key
        .get()
        .ok_or_else(|| anyhow!("no MTProto key"))?;
    let key = PublicKey::new(
        &hex::decode(&info.modulus_hex)?,
        &hex::decode(&info.exponent_hex)?,
    );
    Ok(Server {
        base: format!("http://{}", running.addr),
        running,
        mt_port,
        key,
        store: store.to_string(),
    })
}

/// A file of the phase: its bytes (random: nothing deduplicates) and, once sent, its document.
#[derive(Clone)]
struct File {
    bytes: Arc<Vec<u8>>,
    doc: Option<Doc>,
}

#[derive(Clone, Debug)]
struct Doc {
    id: i64,
    access_hash: i64,
    file_reference: Vec<u8>,
}

fn random_files(n: usize, len: usize) -> Vec<File> {
    (0..n)
        .map(|_| {
            let mut b = vec![0u8; len];
            rand::thread_rng().fill_bytes(&mut b);
            File {
                bytes: Arc::new(b),
                doc: None,
            }
        })
        .collect()
}

/// Files `worker * per .. (worker + 1) * per`, the worker's share.
fn share(files: &[File], worker: usize, per: usize) -> Vec<File> {
    files[worker * per..(worker + 1) * per].to_vec()
}

fn mb_per_s(bytes: u64, d: Duration) -> f64 {
    round1(bytes as f64 / MIB / d.as_secs_f64().max(1e-9))
}

/// The document of a sendMedia answer (`updates` with an updateNewMessage), from JSON.
fn document_of(answer: &Value) -> anyhow::Result<Doc> {
    let doc = answer["updates"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|u| {
            let d = &u["message"]["media"]["document"];
            d.is_object().then_some(d)
        })
        .ok_or_else(|| anyhow!("no document in the answer {answer}"))?;
    let long = |k: &str| {
        doc[k]
            .as_i64()
            .or_else(|| doc[k].as_str().and_then(|s| s.parse().ok()))
            .ok_or_else(|| anyhow!("{k} in {doc}"))
    };
    Ok(Doc {
        id: long("id")?,
        access_hash: long("access_hash")?,
        file_reference: hex::decode(doc["file_reference"].as_str().unwrap_or_default())?,
    })
}

fn send_document_json(file_id: i64, parts: usize) -> Value {
    json!({"peer": {"_": "inputPeerSelf"}, "message": "", "random_id": rand::random::<i64>(),
        "media": {"_": "inputMediaUploadedDocument",
            "file": {"_": "inputFileBig", "id": file_id, "parts": parts, "name": "bench.bin"},
            "mime_type": "application/octet-stream",
            "attributes": [{"_": "documentAttributeFilename", "file_name": "bench.bin"}]}})
}

// ---- raw ceilings ----

/// Writes every file in 512 KiB writes, fsyncs it (as the blob store does) and reads it back in
/// 1 MiB reads, `concurrency` files at a time; answers (write, read) MB/s.
async fn raw_fs(dir: &Path, files: &[File], opts: &MediaOptions) -> anyhow::Result<(f64, f64)> {
    std::fs::create_dir_all(dir)?;
    let total: u64 = files.iter().map(|f| f.bytes.len() as u64).sum();
    let mut timings = Vec::new();
    for write in [true, false] {
        let start = Instant::now();
        let jobs = (0..opts.concurrency).map(|w| {
            let mine = share(files, w, opts.files_per_worker);
            let dir = dir.to_path_buf();
            tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
                use std::io::{Read, Write};
                for (i, f) in mine.iter().enumerate() {
                    let path = dir.join(format!("raw-{w}-{i}"));
                    if write {
                        let mut out = std::fs::File::create(&path)?;
                        for part in f.bytes.chunks(PART_BYTES) {
                            out.write_all(part)?;
                        }
                        out.sync_all()?;
                    } else {
                        let mut inp = std::fs::File::open(&path)?;
                        let mut buf = vec![0u8; CHUNK_BYTES];
                        let mut at = 0;
                        loop {
                            let n = inp.read(&mut buf)?;
                            if n == 0 {
                                break;
                            }
                            if f.bytes.get(at..at + n) != Some(&buf[..n]) {
                                bail!("raw read of {} differs at {at}", path.display());
                            }
                            at += n;
                        }
                        if at != f.bytes.len() {
                            bail!("raw read of {} is {at} bytes", path.display());
                        }
                    }
                }
                Ok(())
            })
        });
        for r in try_join_all(jobs).await? {
            r?;
        }
        timings.push(start.elapsed());
    }
    let _ = std::fs::remove_dir_all(dir);
    Ok((mb_per_s(total, timings[0]), mb_per_s(total, timings[1])))
}

/// Each file PUT whole and read back in 1 MiB ranged GETs straight from the S3 server.
async fn raw_s3(
    s3: &S3Env,
    prefix: &str,
    files: &[File],
    opts: &MediaOptions,
) -> anyhow::Result<(f64, f64)> {
    let store = Arc::new(s3.client()?);
    let total: u64 = files.iter().map(|f| f.bytes.len() as u64).sum();
    let path = |w: usize, i: usize| object_store::path::Path::from(format!("{prefix}/raw/{w}-{i}"));
    let mut timings = Vec::new();
    for write in [true, false] {
        let start = Instant::now();
        let jobs = (0..opts.concurrency).map(|w| {
            let mine = share(files, w, opts.files_per_worker);
            let store = store.clone();
            async move {
                for (i, f) in mine.iter().enumerate() {
                    if write {
                        store
                            .put(&path(w, i), f.bytes.as_ref().clone().into())
                            .await?;
                    } else {
                        let len = f.bytes.len() as u64;
                        let mut at = 0u64;
                        while at < len {
                            let end = (at + CHUNK_BYTES as u64).min(len);
                            let got = store.get_range(&path(w, i), at..end).await?;
                            if f.bytes[at as usize..end as usize] != got[..] {
                                bail!("raw S3 read differs at {at}");
                            }
                            at = end;
                        }
                    }
                }
                anyhow::Ok(())
            }
        });
        try_join_all(jobs).await?;
        timings.push(start.elapsed());
    }
    Ok((mb_per_s(total, timings[0]), mb_per_s(total, timings[1])))
}

/// Deletes what the phase left under its S3 prefix (raw objects and the server's blobs).
async fn clean_s3(s3: &S3Env, prefix: &str) -> anyhow::Result<()> {
    use futures::TryStreamExt;
    let store = s3.client()?;
    let root = object_store::path::Path::from(prefix);
    let objects: Vec<_> = store.list(Some(&root)).try_collect().await?;
    for o in objects {
        store.delete(&o.location).await?;
    }
    Ok(())
}

// ---- through ptslog ----

async fn http_upload(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    f: &File,
) -> anyhow::Result<Doc> {
    let file_id: i64 = rand::thread_rng().gen_range(1..i64::MAX);
    let parts: Vec<&[u8]> = f.bytes.chunks(PART_BYTES).collect();
    for (i, part) in parts.iter().enumerate() {
        let resp = client
            .put(format!(
                "{base}/v1/upload/{file_id}/{i}?total_parts={}",
                parts.len()
            ))
            .bearer_auth(token)
            .body(part.to_vec())
            .send()
            .await?;
        if !resp.status().is_success() {
            bail!(
                "PUT part {i}: {} {}",
                resp.status(),
                resp.text().await.unwrap_or_default()
            );
        }
    }
    let answer = crate::workload::http_call(
        client,
        base,
        token,
        "messages.sendMedia",
        &send_document_json(file_id, parts.len()),
    )
    .await
    .map_err(|e| anyhow!(e))?;
    document_of(&answer)
}

fn download_url(base: &str, d: &Doc) -> String {
    format!(
        "{base}/v1/files/document/{}?access_hash={}&file_reference={}&thumb_size=",
        d.id,
        d.access_hash,
        hex::encode(&d.file_reference)
    )
}

async fn http_download(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    f: &File,
) -> anyhow::Result<()> {
    let doc = f.doc.as_ref().ok_or_else(|| anyhow!("not sent"))?;
    let mut resp = client
        .get(download_url(base, doc))
        .bearer_auth(token)
        .send()
        .await?;
    if resp.status() != reqwest::StatusCode::OK {
        bail!(
            "GET: {} {}",
            resp.status(),
            resp.text().await.unwrap_or_default()
        );
    }
    let mut at = 0;
    while let Some(chunk) = resp.chunk().await? {
        if f.bytes.get(at..at + chunk.len()) != Some(&chunk[..]) {
            bail!("the HTTP download differs at {at}");
        }
        at += chunk.len();
    }
    if at != f.bytes.len() {
        bail!("the HTTP download has {at} of {} bytes", f.bytes.len());
    }
    Ok(())
}

/// TL ids of the hand-encoded calls (the JSON encoding would hex every part on the client).
struct Ids {
    save_big: u32,
    get_file: u32,
    doc_location: u32,
    upload_file: u32,
}

impl Ids {
    fn new() -> anyhow::Result<Self> {
        Ok(Self {
            save_big: constructor("upload.saveBigFilePart")?,
            get_file: constructor("upload.getFile")?,
            doc_location: constructor("inputDocumentFileLocation")?,
            upload_file: constructor("upload.file")?,
        })
    }

    fn get_file(&self, d: &Doc, offset: usize, limit: usize) -> Vec<u8> {
        let mut w = Writer::new();
        w.u32(self.get_file)
            .i32(0)
            .u32(self.doc_location)
            .i64(d.id)
            .i64(d.access_hash)
            .bytes(&d.file_reference)
            .bytes(b"")
            .i64(offset as i64)
            .i32(limit as i32);
        w.buf
    }

    /// The bytes of an `upload.file` answer.
    fn file_bytes(&self, raw: &[u8]) -> anyhow::Result<Vec<u8>> {
        let mut r = Reader::new(raw);
        let err = |e| anyhow!("upload.file: {e:?}");
        if r.u32().map_err(err)? != self.upload_file {
            bail!("not an upload.file answer");
        }
        r.u32().map_err(err)?; // storage.FileType
        r.i32().map_err(err)?; // mtime
        Ok(r.bytes().map_err(err)?.to_vec())
    }
}

async fn mt_upload(s: &mut Session, ids: &Ids, f: &File) -> anyhow::Result<Doc> {
    let file_id: i64 = rand::thread_rng().gen_range(1..i64::MAX);
    let parts: Vec<&[u8]> = f.bytes.chunks(PART_BYTES).collect();
    for (i, part) in parts.iter().enumerate() {
        let mut w = Writer::new();
        w.u32(ids.save_big)
            .i64(file_id)
            .i32(i as i32)
            .i32(parts.len() as i32)
            .bytes(part);
        let raw = s
            .call_raw(&w.buf)
            .await?
            .map_err(|e| anyhow!("saveBigFilePart {i}: {e}"))?;
        if raw.get(..4) != Some(&BOOL_TRUE.to_le_bytes()) {
            bail!("saveBigFilePart {i} did not answer boolTrue");
        }
    }
    let mut req = send_document_json(file_id, parts.len());
    req["_"] = json!("messages.sendMedia");
    let answer = s.call(&req).await.map_err(|e| anyhow!("sendMedia: {e}"))?;
    document_of(&answer)
}

async fn mt_download(s: &mut Session, ids: &Ids, f: &File) -> anyhow::Result<()> {
    let doc = f.doc.as_ref().ok_or_else(|| anyhow!("not sent"))?;
    let mut at = 0;
    loop {
        let raw = s
            .call_raw(&ids.get_file(doc, at, MT_CHUNK_BYTES))
            .await?
            .map_err(|e| anyhow!("getFile at {at}: {e}"))?;
        let chunk = ids.file_bytes(&raw)?;
        if f.bytes.get(at..at + chunk.len()) != Some(&chunk[..]) {
            bail!("the MTProto download differs at {at}");
        }
        at += chunk.len();
        if chunk.len() < MT_CHUNK_BYTES {
            break;
        }
    }
    if at != f.bytes.len() {
        bail!("the MTProto download has {at} of {} bytes", f.bytes.len());
    }
    Ok(())
}

/// Uploads (parts, then sendMedia: the blob is complete when it answers) and downloads every
/// file through one front, `concurrency` accounts at a time; answers (upload, download)
/// durations and the files with their documents.
async fn through_front(
    srv: &Server,
    front: &str,
    users: &[BenchUser],
    sessions: &mut [Session],
    files: Vec<File>,
    opts: &MediaOptions,
    ids: &Arc<Ids>,
) -> anyhow::Result<(Duration, Duration, Vec<File>)> {
    let per = opts.files_per_worker;
    let client = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let mut shares: Vec<Vec<File>> = (0..opts.concurrency)
        .map(|w| share(&files, w, per))
        .collect();
    let mut timings = Vec::new();
    for upload in [true, false] {
        let start = Instant::now();
        let jobs = shares
            .iter_mut()
            .zip(sessions.iter_mut())
            .enumerate()
            .map(|(w, (mine, s))| {
                let (client, base, token, ids) = (
                    client.clone(),
                    srv.base.clone(),
                    users[w].token.clone(),
                    ids.clone(),
                );
                async move {
                    for f in mine.iter_mut() {
                        match (front, upload) {
                            ("http", true) => {
                                f.doc = Some(http_upload(&client, &base, &token, f).await?)
                            }
                            ("http", false) => http_download(&client, &base, &token, f).await?,
                            (_, true) => f.doc = Some(mt_upload(s, &ids, f).await?),
                            (_, false) => mt_download(s, &ids, f).await?,
                        }
                    }
                    anyhow::Ok(())
                }
            });
        try_join_all(jobs).await.with_context(|| {
            format!(
                "{front} {} on {}",
                if upload { "upload" } else { "download" },
                srv.store
            )
        })?;
        timings.push(start.elapsed());
    }
    Ok((
        timings[0],
        timings[1],
        shares.into_iter().flatten().collect(),
    ))
}

fn rss_kib() -> anyhow::Result<u64> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .ok_or_else(|| anyhow!("no VmRSS in /proc/self/status"))
}

/// A socket whose receive buffer is small, so a download that is not read stays in the server.
async fn slow_socket(addr: std::net::SocketAddr) -> anyhow::Result<tokio::net::TcpStream> {
    let sock = tokio::net::TcpSocket::new_v4()?;
    sock.set_recv_buffer_size(16 * 1024)?;
    Ok(sock.connect(addr).await?)
}

/// While `k` downloads of `f` are in flight and none is read, the RSS against before they
/// started; then each is read to its end and checked.
async fn memory(
    srv: &Server,
    front: &str,
    user: &BenchUser,
    key: Option<(&AuthKey, i64)>,
    f: &File,
    k: usize,
) -> anyhow::Result<Memory> {
    let doc = f.doc.clone().ok_or_else(|| anyhow!("not sent"))?;
    let ids = Ids::new()?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = rss_kib()?;
    let mut http_conns = Vec::new();
    let mut mt_sessions = Vec::new();
    for _ in 0..k {
        if front == "http" {
            let mut s = slow_socket(srv.running.addr).await?;
            let path = download_url("", &doc);
            s.write_all(
                format!(
                    "GET {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
                    user.token
                )
                .as_bytes(),
            )
            .await?;
            // The status line: the server has started streaming.
            let mut head = vec![0u8; 16];
            s.read_exact(&mut head).await?;
            if !head.starts_with(b"HTTP/1.1 200") {
                bail!(
                    "slow download answered {:?}",
                    String::from_utf8_lossy(&head)
                );
            }
            http_conns.push((s, head));
        } else {
            let (key, salt) = key.ok_or_else(|| anyhow!("no MTProto key"))?;
            let sock = slow_socket(([127, 0, 0, 1], srv.mt_port).into()).await?;
            let mut s = Session::new(Conn::over(sock).await?, key.clone(), salt);
            let id = s
                .send_request(&ids.get_file(&doc, 0, MT_CHUNK_BYTES))
                .await?;
            mt_sessions.push((s, id));
        }
    }
    // Let the server fill what it can into the sockets and hold the rest.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let loaded = rss_kib()?;
    for (mut s, head) in http_conns {
        let mut all = head;
        s.read_to_end(&mut all).await?;
        let split = all
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .ok_or_else(|| anyhow!("no header end"))?;
        if all[split + 4..] != f.bytes[..] {
            bail!("a slow HTTP download differs");
        }
    }
    for (mut s, id) in mt_sessions {
        let raw = s
            .answer(id)
            .await?
            .map_err(|e| anyhow!("slow getFile: {e}"))?;
        let chunk = ids.file_bytes(&raw)?;
        let want = &f.bytes[..MT_CHUNK_BYTES.min(f.bytes.len())];
        if chunk != want {
            bail!("a slow MTProto download differs");
        }
    }
    let mib = |kib: u64| round1(kib as f64 / 1024.0);
    Ok(Memory {
        front: front.to_string(),
        downloads: k,
        rss_idle_mib: mib(idle),
        rss_loaded_mib: mib(loaded),
        per_download_kib: round1(loaded.saturating_sub(idle) as f64 / k as f64),
    })
}

/// A real JPEG of `w`×`h`, different for each `seed` (nothing deduplicates).
pub fn jpeg(w: u32, h: u32, seed: u32) -> anyhow::Result<Vec<u8>> {
    let img = image::RgbImage::from_fn(w, h, |x, y| {
        image::Rgb([
            ((x + seed) % 256) as u8,
            ((y * 3 + seed) % 256) as u8,
            ((x ^ y).wrapping_add(seed) % 256) as u8,
        ])
    });
    let mut out = std::io::Cursor::new(Vec::new());
    image::DynamicImage::ImageRgb8(img).write_to(&mut out, image::ImageFormat::Jpeg)?;
    Ok(out.into_inner())
}

/// Photos sent with sendMedia (uploaded beforehand; the processing, the sizes' blobs and the
/// message are what is timed), then the same JPEGs through the processor alone.
async fn photos(srv: &Server, users: &[BenchUser], opts: &MediaOptions) -> anyhow::Result<Photos> {
    let (w, h) = opts.photo_size;
    let jpegs: Vec<Arc<Vec<u8>>> = (0..opts.photos)
        .map(|i| jpeg(w, h, i as u32 * 7 + 1).map(Arc::new))
        .collect::<anyhow::Result<_>>()?;
    let client = reqwest::Client::builder().tcp_nodelay(true).build()?;
    let c = opts.photo_concurrency.clamp(1, users.len());
    // Upload every photo (small files: saveFilePart's PUT without total_parts).
    let mut files = Vec::new();
    for (i, bytes) in jpegs.iter().enumerate() {
        let u = &users[i % c];
        let file_id: i64 = rand::thread_rng().gen_range(1..i64::MAX);
        let parts: Vec<&[u8]> = bytes.chunks(PART_BYTES).collect();
        for (p, part) in parts.iter().enumerate() {
            let resp = client
                .put(format!("{}/v1/upload/{file_id}/{p}", srv.base))
                .bearer_auth(&u.token)
                .body(part.to_vec())
                .send()
                .await?;
            if !resp.status().is_success() {
                bail!("photo part: {}", resp.status());
            }
        }
        files.push((i % c, file_id, parts.len()));
    }
    let start = Instant::now();
    let jobs = (0..c).map(|worker| {
        let mine: Vec<(i64, usize)> = files
            .iter()
            .filter(|(u, _, _)| *u == worker)
            .map(|(_, id, n)| (*id, *n))
            .collect();
        let (client, base, token) = (
            client.clone(),
            srv.base.clone(),
            users[worker].token.clone(),
        );
        async move {
            for (file_id, parts) in mine {
                let body = json!({"peer": {"_": "inputPeerSelf"}, "message": "",
                    "random_id": rand::random::<i64>(),
                    "media": {"_": "inputMediaUploadedPhoto", "file": {"_": "inputFile",
                        "id": file_id, "parts": parts, "name": "p.jpg", "md5_checksum": ""}}});
                let answer =
                    crate::workload::http_call(&client, &base, &token, "messages.sendMedia", &body)
                        .await
                        .map_err(|e| anyhow!(e))?;
                let sized = answer["updates"].as_array().into_iter().flatten().any(|u| {
                    u["message"]["media"]["photo"]["sizes"]
                        .as_array()
                        .is_some_and(|s| !s.is_empty())
                });
                if !sized {
                    bail!("sendMedia of a photo answered no sizes: {answer}");
                }
            }
            anyhow::Ok(())
        }
    });
    try_join_all(jobs).await.context("sendMedia of photos")?;
    let send_media = start.elapsed();

    let start = Instant::now();
    let jobs = (0..c).map(|worker| {
        let mine: Vec<Arc<Vec<u8>>> = jpegs.iter().skip(worker).step_by(c).cloned().collect();
        tokio::task::spawn_blocking(move || -> anyhow::Result<()> {
            for j in mine {
                let p = infrastructure::photos::ImagePhotos
                    .process(&j)
                    .map_err(|e| anyhow!("processing: {e}"))?;
                if p.sizes.is_empty() || (p.width, p.height) != (w, h) {
                    bail!(
                        "the processor cut {}×{} into {} sizes",
                        p.width,
                        p.height,
                        p.sizes.len()
                    );
                }
            }
            Ok(())
        })
    });
    for r in try_join_all(jobs).await? {
        r?;
    }
    let direct = start.elapsed();
    let rate = |d: Duration| round1(opts.photos as f64 / d.as_secs_f64().max(1e-9));
    let (a, b) = (rate(send_media), rate(direct));
    Ok(Photos {
        photos: opts.photos,
        width: w,
        height: h,
        concurrency: c,
        send_media_per_s: a,
        direct_per_s: b,
        ratio: if b > 0.0 { round3(a / b) } else { 0.0 },
    })
}

/// Runs the phase on a database of its own (`<db_name>`), dropped at the end unless kept.
pub async fn run(opts: &MediaOptions, db_name: &str) -> anyhow::Result<MediaFigures> {
    let started = Instant::now();
    setup::create_database(&opts.admin_url, db_name).await?;
    let db_url = setup::database_url(&opts.admin_url, db_name);
    let result = run_on(opts, &db_url, db_name).await;
    if !opts.keep_db {
        if let Err(e) = setup::drop_database(&opts.admin_url, db_name).await {
            eprintln!("could not drop {db_name}: {e}");
        }
    }
    let mut figures = result?;
    figures.wall_s = round1(started.elapsed().as_secs_f64());
    Ok(figures)
}

async fn run_on(opts: &MediaOptions, db_url: &str, db_name: &str) -> anyhow::Result<MediaFigures> {
    if opts.concurrency == 0 || opts.files_per_worker == 0 {
        bail!("the media phase needs at least one transfer");
    }
    let s3 = S3Env::from_env();
    let mut stores = vec![("fs".to_string(), Vec::new())];
    let prefix = format!("bench-{}", rand::random::<u32>());
    if let Some(s3) = &s3 {
        stores.push(("s3".to_string(), s3.vars(&prefix)));
    }
    let mut figures = MediaFigures {
        file_bytes: opts.file_bytes,
        concurrency: opts.concurrency,
        files_per_worker: opts.files_per_worker,
        s3: match &s3 {
            Some(s) => format!("s3s-fs at {}", s.endpoint),
            None => "not measured (PTSLOG_TEST_S3_* unset)".into(),
        },
        transfers: Vec::new(),
        memory: Vec::new(),
        photos: None,
        wall_s: 0.0,
    };
    let ids = Arc::new(Ids::new()?);
    let n = opts.concurrency;
    let mut users: Vec<BenchUser> = Vec::new();
    for (store, vars) in stores {
        let mut vars = vars;
        if store == "fs" {
            vars.push(("PTSLOG_BLOB_STORE".into(), "fs".into()));
            vars.push((
                "PTSLOG_BLOB_DIR".into(),
                opts.work_dir.join("media-blobs").display().to_string(),
            ));
        }
        let srv = start_server(opts, db_url, db_name, &store, vars).await?;
        if users.is_empty() {
            users = setup::create_users(&srv.running.app, &srv.running.pool, n.max(2)).await?;
        }
        let phones: Vec<String> = (1..=n).map(setup::phone).collect();
        let mut sessions = Vec::new();
        for p in &phones {
            sessions.push(Session::sign_in(srv.mt_port, &srv.key, p).await?);
        }
        let count = opts.concurrency * opts.files_per_worker;
        let total = (count * opts.file_bytes) as u64;

        log(opts, format!("  media ({store}): raw ceiling"));
        let raw_files = random_files(count, opts.file_bytes);
        let (raw_up, raw_down) = match &s3 {
            Some(s) if store == "s3" => raw_s3(s, &prefix, &raw_files, opts).await?,
            _ => raw_fs(&opts.work_dir.join("media-raw"), &raw_files, opts).await?,
        };
        drop(raw_files);
        let mut kept = None;
        for front in ["http", "mtproto"] {
            log(opts, format!("  media ({store}): {front}"));
            let files = random_files(count, opts.file_bytes);
            let (up, down, files) =
                through_front(&srv, front, &users, &mut sessions, files, opts, &ids).await?;
            for (direction, d, raw) in [("upload", up, raw_up), ("download", down, raw_down)] {
                let rate = mb_per_s(total, d);
                let t = Transfer {
                    store: store.clone(),
                    direction: direction.into(),
                    front: front.into(),
                    mb_per_s: rate,
                    raw_mb_per_s: raw,
                    ratio: if raw > 0.0 { round3(rate / raw) } else { 0.0 },
                    bytes: total,
                    seconds: round3(d.as_secs_f64()),
                };
                log(opts, format!(
                    "  media {store} {direction} {front}: {rate:.1} MB/s, raw {raw:.1} MB/s ({:.2})",
                    t.ratio
                ));
                figures.transfers.push(t);
            }
            kept = files.into_iter().next();
        }
        if store == "fs" {
            let f = kept.ok_or_else(|| anyhow!("no file sent"))?;
            let key = (&sessions[0].key, sessions[0].salt);
            for front in ["http", "mtproto"] {
                let m = memory(&srv, front, &users[0], Some(key), &f, opts.slow_downloads).await?;
                log(opts, format!(
                    "  media memory {front}: {} slow downloads, RSS {:.1} → {:.1} MiB, {:.0} KiB each",
                    m.downloads, m.rss_idle_mib, m.rss_loaded_mib, m.per_download_kib
                ));
                figures.memory.push(m);
            }
            let p = photos(&srv, &users, opts).await?;
            log(
                opts,
                format!(
                    "  media photos: sendMedia {:.1}/s, processor alone {:.1}/s ({:.2})",
                    p.send_media_per_s, p.direct_per_s, p.ratio
                ),
            );
            figures.photos = Some(p);
        }
        drop(sessions);
        srv.running.shutdown().await;
    }
    let _ = std::fs::remove_dir_all(opts.work_dir.join("media-blobs"));
    if let Some(s3) = &s3 {
        clean_s3(s3, &prefix)
            .await
            .context("cleaning the S3 prefix")?;
    }
    Ok(figures)
}

/// `ptslog-bench --media-only`: the media phase alone, its figures in `opts.out` (JSON) and the
/// media region of `opts.markdown`.
pub async fn run_alone(opts: &crate::Options) -> anyhow::Result<MediaFigures> {
    let stamp = chrono::Utc::now();
    let ts = format!(
        "{}_{:04x}",
        stamp.format("%Y%m%d_%H%M%S"),
        rand::thread_rng().gen::<u16>()
    );
    let work_dir = std::env::temp_dir().join(format!("ptslog-bench-{ts}"));
    std::fs::create_dir_all(&work_dir)?;
    let mut m = if opts.quick {
        MediaOptions::quick(&opts.admin_url, &opts.redis_url, &work_dir)
    } else {
        MediaOptions::full(&opts.admin_url, &opts.redis_url, &work_dir)
    };
    m.keep_db = opts.keep_db;
    m.verbose = opts.verbose;
    let figures = run(&m, &format!("ptslog_bench_{ts}_media")).await;
    let _ = std::fs::remove_dir_all(&work_dir);
    let figures = figures?;
    let started_at = stamp.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
    if let Some(out) = &opts.out {
        if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let json = json!({"started_at": started_at, "quick": opts.quick,
            "machine": crate::report::Machine::probe(), "media": figures});
        std::fs::write(out, serde_json::to_string_pretty(&json)?)?;
    }
    if let Some(md) = &opts.markdown {
        figures.write_markdown(md, &started_at, opts.quick)?;
    }
    Ok(figures)
}
