//! A tansu broker of the test's own (a Kafka-protocol broker; `scripts/test` builds it and exports
//! `PTSLOG_TEST_TANSU`), so the test can stop and restart it without disturbing other tests. It
//! keeps its data in memory: a restart comes back empty, like a broker whose disk was replaced;
//! the topic is created again as an operator (or the relay) would.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Broker {
    bin: PathBuf,
    pub port: u16,
    child: Option<Child>,
}

/// The tansu binary, if this run has one.
pub fn tansu() -> Option<PathBuf> {
    std::env::var_os("PTSLOG_TEST_TANSU")
        .map(PathBuf::from)
        .filter(|p| p.exists())
}

impl Broker {
    pub fn start(bin: PathBuf, port: u16) -> Self {
        let mut broker = Broker {
            bin,
            port,
            child: None,
        };
        broker.restart();
        broker
    }

    pub fn address(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Starts the broker (again) on the same port and creates the topic.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "broker already running");
        let url = format!("tcp://127.0.0.1:{}", self.port);
        let child = Command::new(&self.bin)
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
                "--storage-engine",
                "memory://tansu/",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawning tansu");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "tansu did not listen on {url}");
            std::thread::sleep(Duration::from_millis(100));
        }
        // The relay creates the topic as well when it finds it missing; whoever comes first wins.
        let topic = infrastructure::kafka::DEFAULT_TOPIC;
        let created = Command::new(&self.bin)
            .args([
                "topic",
                "create",
                "--broker",
                &url,
                "--partitions",
                "4",
                topic,
            ])
            .stdin(Stdio::null())
            .output()
            .expect("tansu topic create");
        if !created.status.success() {
            let listed = Command::new(&self.bin)
                .args(["topic", "list", "--broker", &url])
                .stdin(Stdio::null())
                .output()
                .expect("tansu topic list");
            assert!(
                String::from_utf8_lossy(&listed.stdout).contains(topic),
                "tansu topic create: {}",
                String::from_utf8_lossy(&created.stderr)
            );
        }
    }

    /// Kills the broker (as a crash would).
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}
