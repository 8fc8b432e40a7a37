//! Telegram Desktop 4.6.5, the client ptslog is for, against `ptslog serve`, driven like a person
//! would: Debian 12's `telegram-desktop` binary re-pointed at 127.0.0.1:443 with this server's
//! RSA key by `tests/tdesktop/patch_tdesk.py` (no rebuild), run under Xvfb in a network namespace
//! that has only loopback, so nothing it tries leaves the machine. Inside the namespace a `socat`
//! listens on 127.0.0.1:443 and forwards through a Unix socket (path sockets cross network
//! namespaces) to a second `socat` outside, which connects to the server's MTProto port; the
//! server, its Postgres and Redis, and the JSON API the second account uses stay outside.
//!
//! The client signs up (keyboard, and two clicks on the name form), receives a message from a
//! second account (JSON API), opens the chat (its `messages.readHistory` is checked on the
//! sender's side), replies by typing, sees an edit and a deletion, catches up with
//! `updates.getDifference` after its connections were cut, and restarts with the same workdir
//! without signing in again. A second client (another workdir, same account) shows the same chat, and catches up on a
//! send, an edit, a read and a deletion made while it was closed. Every call the clients make that
//! the server answers with an error, or cannot decode, fails the test. Screenshots of each step
//! are kept under `<target>/tmp/tdesktop/` (a set is committed in `docs/tdesktop/`).
//!
//! `tests/tdesktop/patch_tdesk.py` and `xwd2png.py` (screenshots without PIL) are the project's
//! own shared tools for this client, copied here as test tooling.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use ptslog_tests::code_receiver::{Answer, CodeReceiver};
use ptslog_tests::Device;

use super::Setup;

/// The Debian packages the test needs, and a file each installs.
const PACKAGES: &[(&str, &str)] = &[
    ("telegram-desktop", "/usr/bin/telegram-desktop"),
    ("xvfb", "/usr/bin/Xvfb"),
    ("xdotool", "/usr/bin/xdotool"),
    ("x11-apps", "/usr/bin/xwd"),
    ("socat", "/usr/bin/socat"),
];

/// The longest wait for anything the client does (start-up alone is ~25 s on two shared cores).
const CLIENT_WAIT: Duration = Duration::from_secs(150);

/// The TDesktop account's phone as typed into the phone form (country +1 is preselected).
const DESK_NATIONAL: &str = "5551990001";
const DESK_PHONE: &str = "+15551990001";
const OTHER_PHONE: &str = "+15551990002";

/// Installs what is missing (Debian 12: `telegram-desktop` 4.6.5, which `patch_tdesk.py` knows).
fn ensure_packages() -> Result<(), String> {
    let missing: Vec<&str> = PACKAGES
        .iter()
        .filter(|(_, file)| !Path::new(file).exists())
        .map(|(package, _)| *package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q"])
            .args(&missing)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    if install() {
        return Ok(());
    }
    let _ = Command::new("apt-get").args(["update", "-q"]).status();
    if install() {
        Ok(())
    } else {
        Err(format!("apt-get install {missing:?} failed"))
    }
}

/// Whether this machine lets us make network, mount and pid namespaces (root in a container
/// without those rights cannot).
fn namespaces_available() -> bool {
    Command::new("unshare")
        .args(["-n", "-m", "-p", "--fork", "--mount-proc", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Inside the namespace: loopback up, a private /tmp/.X11-unix (Xvfb's sockets; its lock files
/// are off, see `-nolock`), the forwarder to the server on 127.0.0.1:443, then a process that
/// holds the namespace until killed. Not a private /tmp: the checkout (the patched binary, the
/// forwarder's socket) may itself be under /tmp.
const NAMESPACE_SCRIPT: &str = r#"
set -e
ip link set lo up
mkdir -p /tmp/.X11-unix
mount -t tmpfs -o mode=1777 tmpfs /tmp/.X11-unix
socat TCP-LISTEN:443,bind=127.0.0.1,reuseaddr,fork "UNIX-CONNECT:$1" &
exec sleep infinity
"#;

/// A loopback-only network namespace (with its own mounts and pids: when its first process dies,
/// the kernel ends every process in it), and the bridge from it to the server.
struct Namespace {
    holder: Child,
    /// Replaced by [`Namespace::restore`] while clients hold the namespace.
    bridge: std::sync::Mutex<Child>,
    /// The namespace's first process, as seen from outside (for nsenter).
    pid: u32,
    sock: PathBuf,
}

/// The outer half of the bridge: the Unix socket the namespace's forwarder connects to, relayed
/// to the server's MTProto port.
fn bridge(sock: &Path, mt_port: u16) -> Child {
    let _ = std::fs::remove_file(sock);
    let child = Command::new("socat")
        .arg(format!("UNIX-LISTEN:{},fork", sock.display()))
        .arg(format!("TCP:127.0.0.1:{mt_port}"))
        .stdin(Stdio::null())
        .spawn()
        .expect("socat (outside)");
    wait_blocking(Duration::from_secs(10), "the bridge's socket", || {
        sock.exists()
    });
    child
}

impl Namespace {
    fn start(dir: &Path, mt_port: u16) -> Namespace {
        let sock = dir.join("mtproto.sock");
        let bridge = bridge(&sock, mt_port);
        // --kill-child: the namespace goes with this process, however the test ends.
        let holder = Command::new("unshare")
            .args(["-n", "-m", "-p", "--fork", "--mount-proc", "--kill-child"])
            .args(["bash", "-c", NAMESPACE_SCRIPT, "namespace"])
            .arg(&sock)
            .stdin(Stdio::null())
            .spawn()
            .expect("unshare");
        let children = format!("/proc/{0}/task/{0}/children", holder.id());
        let mut pid = 0;
        wait_blocking(Duration::from_secs(10), "the namespace", || {
            pid = std::fs::read_to_string(&children)
                .ok()
                .and_then(|c| c.split_whitespace().next()?.parse().ok())
                .unwrap_or(0);
            pid != 0
        });
        Namespace {
            holder,
            bridge: std::sync::Mutex::new(bridge),
            pid,
            sock,
        }
    }

    /// Cuts the client off: the bridge and every connection it forwards (socat forks one child
    /// per connection).
    fn cut(&self) {
        let mut bridge = self.bridge.lock().unwrap();
        // Read before the parent dies: its children are then the init process's.
        let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", bridge.id()))
            .unwrap_or_default();
        let _ = bridge.kill();
        let _ = bridge.wait();
        for pid in children.split_whitespace() {
            let _ = Command::new("kill").arg(pid).status();
        }
    }

    /// The bridge again, after [`Namespace::cut`].
    fn restore(&self, mt_port: u16) {
        *self.bridge.lock().unwrap() = bridge(&self.sock, mt_port);
    }

    /// `program` run inside the namespace (its network, mounts and pids).
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("nsenter");
        cmd.args(["-t", &self.pid.to_string(), "-n", "-m", "-p", "--"])
            .arg(program)
            .stdin(Stdio::null());
        cmd
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
        self.cut();
    }
}

/// One Telegram Desktop: its own X display (so keys go to it alone) and workdir.
struct Desktop<'a> {
    ns: &'a Namespace,
    name: &'static str,
    display: String,
    workdir: PathBuf,
    binary: PathBuf,
    shots: PathBuf,
    xvfb: Child,
    client: Option<Child>,
}

impl<'a> Desktop<'a> {
    fn new(ns: &'a Namespace, dir: &Path, binary: &Path, name: &'static str, n: u32) -> Self {
        let display = format!(":{n}");
        let xvfb = ns
            .command("Xvfb")
            // -noreset: an X server resets when its last client leaves, and a client started
            // again then may find no display.
            .args([
                &display,
                "-screen",
                "0",
                "1024x700x24",
                "-nolisten",
                "tcp",
                "-noreset",
                // No /tmp/.X<n>-lock: /tmp is the host's, and a lock left by a killed run (its pid
                // from this namespace) must not block the next.
                "-nolock",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb");
        let workdir = dir.join(name);
        std::fs::create_dir_all(&workdir).expect("workdir");
        let d = Desktop {
            ns,
            name,
            display,
            workdir,
            binary: binary.to_path_buf(),
            shots: dir.join("screenshots"),
            xvfb,
            client: None,
        };
        wait_blocking(Duration::from_secs(30), "Xvfb", || {
            d.x("xdpyinfo", &[]).is_ok()
                || d.x("xwd", &["-root", "-silent", "-out", "/dev/null"])
                    .is_ok()
        });
        d
    }

    /// An X tool against this display; its stdout.
    fn x(&self, tool: &str, args: &[&str]) -> Result<String, String> {
        let out = self
            .ns
            .command(tool)
            .args(args)
            .env("DISPLAY", &self.display)
            .output()
            .map_err(|e| format!("{tool}: {e}"))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).into_owned())
        } else {
            Err(format!(
                "{tool} {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    }

    fn start(&mut self) {
        let log = std::fs::File::create(self.workdir.join("stdout.log")).expect("client log");
        let child = self
            .ns
            .command(&self.binary)
            .arg("-workdir")
            .arg(format!("{}/", self.workdir.display()))
            .args(["-noupdate"])
            .env("DISPLAY", &self.display)
            .env("HOME", &self.workdir)
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("telegram-desktop");
        let mut child = child;
        // Its window, mapped (start-up takes ~25 s here); an early exit says why.
        let log = self.workdir.join("stdout.log");
        wait_blocking(CLIENT_WAIT, "the Telegram Desktop window", || {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "Telegram Desktop exited ({status}):\n{}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                );
            }
            self.x(
                "xdotool",
                &["search", "--onlyvisible", "--name", "Telegram"],
            )
            .is_ok_and(|w| !w.trim().is_empty())
        });
        self.client = Some(child);
    }

    /// Quits the way a person does (`-quit` asks the running instance of this workdir to close).
    fn quit(&mut self) {
        let _ = self
            .ns
            .command(&self.binary)
            .arg("-workdir")
            .arg(format!("{}/", self.workdir.display()))
            .arg("-quit")
            .env("DISPLAY", &self.display)
            .env("HOME", &self.workdir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        if let Some(mut child) = self.client.take() {
            let deadline = Instant::now() + Duration::from_secs(30);
            while Instant::now() < deadline {
                if child.try_wait().ok().flatten().is_some() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Keys (xdotool names) to the client: the pointer over its window gives it the focus (no
    /// window manager here).
    fn keys(&self, keys: &[&str]) {
        self.x("xdotool", &["mousemove", "512", "350"])
            .expect("mousemove");
        let mut args = vec!["key", "--delay", "150"];
        args.extend_from_slice(keys);
        self.x("xdotool", &args).expect("xdotool key");
    }

    /// A click on the first row of the chat list (its shortcuts need an active window, which
    /// there is none of without a window manager).
    fn open_first_chat(&self) {
        self.click(240, 124);
    }

    /// A click at (x, y), the pointer then back over the chat area.
    fn click(&self, x: u32, y: u32) {
        self.x(
            "xdotool",
            &["mousemove", &x.to_string(), &y.to_string(), "click", "1"],
        )
        .expect("click");
        self.x("xdotool", &["mousemove", "660", "400"])
            .expect("mousemove");
    }

    fn type_text(&self, text: &str) {
        self.x("xdotool", &["mousemove", "512", "350"])
            .expect("mousemove");
        self.x("xdotool", &["type", "--delay", "120", text])
            .expect("xdotool type");
    }

    /// A screenshot of the display, `screenshots/<n>-<name>-<step>.png`.
    fn shot(&self, n: u32, step: &str) -> PathBuf {
        std::fs::create_dir_all(&self.shots).expect("screenshots dir");
        let xwd = self.shots.join(format!("{}.xwd", self.name));
        let png = self.shots.join(format!("{n:02}-{}-{step}.png", self.name));
        self.x("xwd", &["-root", "-silent", "-out", &xwd.to_string_lossy()])
            .expect("xwd");
        let status = Command::new("python3")
            .arg(tools().join("xwd2png.py"))
            .arg(&xwd)
            .arg(&png)
            .status()
            .expect("python3");
        assert!(status.success(), "xwd2png");
        let _ = std::fs::remove_file(&xwd);
        png
    }
}

impl Drop for Desktop<'_> {
    fn drop(&mut self) {
        if let Some(mut c) = self.client.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = self.xvfb.kill();
        let _ = self.xvfb.wait();
    }
}

fn tools() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tdesktop")
}

fn wait_blocking(limit: Duration, what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// One call of the server's debug log.
#[derive(Debug, Clone)]
struct Call {
    method: String,
    user: Option<i64>,
    /// The auth key (device) it came from.
    key: Option<i64>,
}

/// What the server's log says about the MTProto calls so far: every call, and every line for a
/// call it answered with an error or could not decode.
struct ServerLog(PathBuf);

impl ServerLog {
    fn read(&self) -> (Vec<Call>, Vec<String>) {
        let text = std::fs::read_to_string(&self.0).unwrap_or_default();
        let field = |line: &str, name: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{name}=")))
                .map(|v| {
                    v.trim_start_matches("Some(")
                        .trim_end_matches(')')
                        .to_string()
                })
        };
        let mut calls = Vec::new();
        let mut errors = Vec::new();
        for line in text.lines() {
            if line.contains("MTProto call not decoded")
                || line.contains("MTProto call answered with an error")
                || line.contains("MTProto method not served")
            {
                errors.push(line.to_string());
            } else if line.contains(" MTProto call ") {
                calls.push(Call {
                    method: field(line, "method").unwrap_or_default(),
                    user: field(line, "user").and_then(|u| u.parse().ok()),
                    key: field(line, "key").and_then(|u| u.parse().ok()),
                });
            }
        }
        (calls, errors)
    }

    fn calls(&self) -> Vec<Call> {
        self.read().0
    }

    fn errors(&self) -> Vec<String> {
        self.read().1
    }

    /// Waits until a call of `method` past the first `after` calls (by `user` if given).
    async fn wait_call(&self, after: usize, method: &str, user: Option<i64>) -> Call {
        let deadline = Instant::now() + CLIENT_WAIT;
        loop {
            if let Some(c) = self
                .calls()
                .into_iter()
                .skip(after)
                .find(|c| c.method == method && (user.is_none() || c.user == user))
            {
                return c;
            }
            assert!(
                Instant::now() < deadline,
                "no {method} call within {CLIENT_WAIT:?}; errors so far: {:#?}",
                self.errors()
            );
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
}

/// The second account, over the JSON API (the harness's device, and what this test waits for).
struct Other(Device);

impl Other {
    /// The read outbox max id of the chat with `peer`: how far the TDesktop account has read.
    async fn read_outbox(&self, peer: &Value) -> i64 {
        let d = self
            .0
            .rpc(
                "messages.getPeerDialogs",
                json!({"peers": [{"_": "inputDialogPeer", "peer": peer}]}),
            )
            .await;
        d["dialogs"][0]["read_outbox_max_id"].as_i64().unwrap_or(0)
    }

    async fn wait_read(&self, peer: &Value, id: i64) {
        let deadline = Instant::now() + CLIENT_WAIT;
        while self.read_outbox(peer).await < id {
            assert!(
                Instant::now() < deadline,
                "Telegram Desktop did not read message {id} within {CLIENT_WAIT:?}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Waits until the history with `peer` has a message with `text`.
    async fn wait_message(&self, peer: &Value, text: &str) {
        let deadline = Instant::now() + CLIENT_WAIT;
        loop {
            let h = self
                .0
                .rpc("messages.getHistory", json!({"peer": peer, "limit": 20}))
                .await;
            if h["messages"]
                .as_array()
                .is_some_and(|ms| ms.iter().any(|m| m["message"] == text))
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no message {text:?} from Telegram Desktop within {CLIENT_WAIT:?}: {h}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    /// Sends `text`; its id.
    async fn send(&self, peer: &Value, text: &str) -> i64 {
        let sent = self.0.send(peer, text).await;
        sent["id"]
            .as_i64()
            .unwrap_or_else(|| panic!("updateShortSentMessage: {sent}"))
    }

    async fn edit(&self, peer: &Value, id: i64, text: &str) {
        self.0
            .rpc(
                "messages.editMessage",
                json!({"peer": peer, "id": id, "message": text}),
            )
            .await;
    }

    async fn delete(&self, id: i64) {
        self.0
            .rpc(
                "messages.deleteMessages",
                json!({"revoke": true, "id": [id]}),
            )
            .await;
    }
}

/// Refusals the client expects: Telegram answers the same for a sticker set or username that
/// does not exist, and this server has none.
const EXPECTED_REFUSALS: &[&str] = &["STICKERSET_INVALID", "USERNAME_NOT_OCCUPIED"];

/// The log's error lines other than the expected refusals.
fn unexpected(errors: Vec<String>) -> Vec<String> {
    errors
        .into_iter()
        .filter(|l| {
            !EXPECTED_REFUSALS
                .iter()
                .any(|r| l.contains(&format!("error={r}")))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_desktop_signs_in_and_chats() {
    if !namespaces_available() {
        eprintln!(
            "\n######## SKIPPED telegram_desktop_signs_in_and_chats: this machine cannot create \
             network namespaces (unshare -n -m -p); the Telegram Desktop test needs one. ########\n"
        );
        return;
    }
    tokio::task::spawn_blocking(ensure_packages)
        .await
        .expect("installer thread")
        .unwrap_or_else(|e| panic!("the Telegram Desktop test needs its packages: {e}"));
    let started = Instant::now();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tdesktop");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("test dir");

    let setup = Setup::fresh("tdesktop").await;
    let log = ServerLog(dir.join("server.log"));
    // Codes go out as in production, to an SMS gateway's webhook: the client types what it got.
    let sms = CodeReceiver::start(Answer::Ok).await;
    let mut server = super::Server(
        setup
            .command()
            // What help.getConfig tells the client: the forwarder in its namespace.
            .env("PTSLOG_MTPROTO_PUBLIC_ADDR", "127.0.0.1:443")
            .env("PTSLOG_LOGIN_WEBHOOK_URL", &sms.url)
            .env("RUST_LOG", "warn,ptslog_server::mtproto::calls=debug")
            .env("NO_COLOR", "1")
            .stderr(std::fs::File::create(&log.0).expect("server log"))
            .spawn()
            .expect("ptslog serve"),
    );
    let key = setup.wait_ready(&mut server).await;
    let pem = dir.join("server-key.pem");
    std::fs::write(&pem, key["pem"].as_str().expect("pem")).expect("pem file");
    let binary = dir.join("Telegram");
    let patched = Command::new("python3")
        .arg(tools().join("patch_tdesk.py"))
        .arg("/usr/bin/telegram-desktop")
        .arg(&binary)
        .arg(&pem)
        .args(["127.0.0.1", "443", "--tcpo"])
        .stdout(Stdio::null())
        .status()
        .expect("python3");
    assert!(
        patched.success(),
        "patch_tdesk.py refused this telegram-desktop build"
    );
    std::fs::set_permissions(&binary, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");

    // The second account, driven over the JSON API.
    let http = reqwest::Client::new();
    let login: Value = http
        .post(format!("{}/v1/auth/login", setup.http()))
        .json(&json!({"phone": OTHER_PHONE, "first_name": "Other"}))
        .send()
        .await
        .expect("login")
        .json()
        .await
        .expect("login body");
    let other = Other(Device {
        base: setup.http(),
        http,
        token: login["token"].as_str().expect("token").to_string(),
        user_id: login["user_id"].as_i64().expect("user_id"),
    });

    let ns = tokio::task::block_in_place(|| Namespace::start(&dir, setup.mt_port));
    let mut a = tokio::task::block_in_place(|| Desktop::new(&ns, &dir, &binary, "a", 7));

    // 1. Sign in by keyboard: Start Messaging, the QR screen, the phone form, the code (the form
    // submits itself at the length auth.sentCode gave).
    let mark = log.calls().len();
    tokio::task::block_in_place(|| a.start());
    log.wait_call(mark, "help.getConfig", None).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    a.shot(1, "welcome");
    a.keys(&["Return"]);
    log.wait_call(mark, "auth.exportLoginToken", None).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    a.keys(&["Return"]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    a.type_text(DESK_NATIONAL);
    a.shot(2, "phone");
    a.keys(&["Return"]);
    log.wait_call(mark, "auth.sendCode", None).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    a.shot(3, "code");
    a.type_text(&sms.code_for(DESK_PHONE).await);
    // A new phone: the sign-up form. Its first field has the focus; the form moves the focus to
    // the last name before it submits, which a window that is never active (no window manager)
    // does not take, so that field and the button are clicked.
    log.wait_call(mark, "auth.signIn", None).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    a.type_text("Desk");
    a.click(511, 347);
    a.type_text("Top");
    a.shot(4, "sign-up");
    a.click(511, 438);
    log.wait_call(mark, "auth.signUp", None).await;
    let me = log.wait_call(mark, "updates.getState", None).await;
    let desk_user = me.user.expect("signed in");
    tokio::time::sleep(Duration::from_secs(5)).await;
    a.shot(5, "signed-in");

    // 2. A message from the second account arrives; the chat, opened, reads it.
    let desk_peer = other.0.peer_of(DESK_PHONE).await;
    assert_eq!(desk_peer["user_id"], desk_user);
    let first = other.send(&desk_peer, "Hello from the other account").await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    a.shot(6, "message-arrived");
    a.open_first_chat();
    other.wait_read(&desk_peer, first).await;
    a.shot(7, "chat-opened");

    // 3. A reply typed in Telegram Desktop reaches the second account.
    a.type_text("Hi, typed in Telegram Desktop");
    a.keys(&["Return"]);
    other
        .wait_message(&desk_peer, "Hi, typed in Telegram Desktop")
        .await;
    a.shot(8, "reply-sent");

    // 4. An edit and a deletion by the second account reach it.
    let doomed = other.send(&desk_peer, "This one will be deleted").await;
    other.wait_read(&desk_peer, doomed).await;
    other.edit(&desk_peer, first, "Hello (edited)").await;
    other.delete(doomed).await;
    let mark = log.calls().len();
    let probe = other
        .send(&desk_peer, "After the edit and the deletion")
        .await;
    other.wait_read(&desk_peer, probe).await;
    a.shot(9, "edited-and-deleted");
    assert_eq!(
        unexpected(log.errors()),
        Vec::<String>::new(),
        "calls answered with errors"
    );
    assert!(log.calls().len() > mark);

    // 5. Offline while running (its connections cut): a send, an edit, a read and a deletion,
    // then back online it catches up with updates.getDifference.
    tokio::task::block_in_place(|| ns.cut());
    let offline = other.send(&desk_peer, "Sent while you were offline").await;
    let doomed = other
        .send(&desk_peer, "Deleted while you were offline")
        .await;
    other
        .edit(
            &desk_peer,
            offline,
            "Sent (and edited) while you were offline",
        )
        .await;
    other.delete(doomed).await;
    other
        .0
        .rpc(
            "messages.readHistory",
            json!({"peer": desk_peer, "max_id": 0}),
        )
        .await;
    let mark = log.calls().len();
    tokio::task::block_in_place(|| ns.restore(setup.mt_port));
    log.wait_call(mark, "updates.getDifference", Some(desk_user))
        .await;
    other.wait_read(&desk_peer, offline).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    a.shot(10, "caught-up");

    // 6. A restart with the same workdir: no sign-in, and what came meanwhile is there.
    tokio::task::block_in_place(|| a.quit());
    let away = other.send(&desk_peer, "Sent while you were away").await;
    let mark = log.calls().len();
    tokio::task::block_in_place(|| a.start());
    let resumed = log
        .wait_call(mark, "updates.getState", Some(desk_user))
        .await;
    assert_eq!(resumed.key, me.key, "the same device (auth key) as before");
    tokio::time::sleep(Duration::from_secs(5)).await;
    a.shot(11, "restarted");
    a.open_first_chat();
    other.wait_read(&desk_peer, away).await;
    a.shot(12, "restarted-chat");
    let signed_in_again: Vec<Call> = log
        .calls()
        .into_iter()
        .skip(mark)
        .filter(|c| c.method.starts_with("auth."))
        .filter(|c| c.method != "auth.bindTempAuthKey")
        .collect();
    assert!(
        signed_in_again.is_empty(),
        "signed in again: {signed_in_again:?}"
    );
    assert_eq!(
        unexpected(log.errors()),
        Vec::<String>::new(),
        "calls answered with errors"
    );

    // 7. A second Telegram Desktop (another workdir and display, the same account) signs in as
    // another device and shows the same chat.
    let mut b = tokio::task::block_in_place(|| Desktop::new(&ns, &dir, &binary, "b", 8));
    let codes_before = sms.received().len();
    let mark = log.calls().len();
    tokio::task::block_in_place(|| b.start());
    // Its window is up; the welcome screen takes keys once it has its config.
    tokio::time::sleep(Duration::from_secs(5)).await;
    b.keys(&["Return"]);
    log.wait_call(mark, "auth.exportLoginToken", None).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    b.keys(&["Return"]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    b.type_text(DESK_NATIONAL);
    b.keys(&["Return"]);
    log.wait_call(mark, "auth.sendCode", None).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The code of this sign-in, not the first client's.
    let deadline = Instant::now() + Duration::from_secs(30);
    while sms.received().len() <= codes_before {
        assert!(Instant::now() < deadline, "no code for the second client");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    b.type_text(&sms.code_for(DESK_PHONE).await);
    let b_state = log
        .wait_call(mark, "updates.getState", Some(desk_user))
        .await;
    assert_ne!(b_state.key, me.key, "a device of its own");
    tokio::time::sleep(Duration::from_secs(3)).await;
    let mark = log.calls().len();
    b.open_first_chat();
    let history = log
        .wait_call(mark, "messages.getHistory", Some(desk_user))
        .await;
    assert_eq!(history.key, b_state.key);
    tokio::time::sleep(Duration::from_secs(3)).await;
    b.shot(13, "same-chat");

    // 8. Closed while a send, an edit, a deletion (the second account) and a read (the first
    // Telegram Desktop, whose chat is open) happen; started again it shows them.
    tokio::task::block_in_place(|| b.quit());
    let later = other
        .send(&desk_peer, "Sent while the second one was closed")
        .await;
    let doomed = other.send(&desk_peer, "Deleted while it was closed").await;
    other
        .edit(
            &desk_peer,
            later,
            "Sent and edited while the second one was closed",
        )
        .await;
    other.wait_read(&desk_peer, doomed).await;
    other.delete(doomed).await;
    let mark = log.calls().len();
    tokio::task::block_in_place(|| b.start());
    log.wait_call(mark, "messages.getDialogs", Some(desk_user))
        .await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    let mark = log.calls().len();
    b.open_first_chat();
    log.wait_call(mark, "messages.getHistory", Some(desk_user))
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    b.shot(14, "caught-up");
    assert_eq!(
        unexpected(log.errors()),
        Vec::<String>::new(),
        "calls answered with errors"
    );

    eprintln!(
        "telegram_desktop_signs_in_and_chats: {:?}",
        started.elapsed()
    );
    drop(b);
    drop(a);
    drop(ns);
    // Passed: the screenshots and the server's log stay; the client and its workdirs go.
    let _ = std::fs::remove_file(&binary);
    for workdir in ["a", "b"] {
        let _ = std::fs::remove_dir_all(dir.join(workdir));
    }
    drop(server);
    drop(setup);
}
