//! The reads phases' HTTP client: HTTP/1.1 keep-alive over one connection per worker, each
//! request written as one buffer and each answer read by its Content-Length, as wrk does. The
//! load generator shares the two cores with the server and Postgres, and reqwest spent 35–60 µs
//! of them per call (docs/performance.md, "The load generator"); this client spends a fraction of
//! that, so the reads' HTTP / pgbench ratio measures the server rather than its client.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// An answer's head may not be longer than this (the server's are a few lines).
const MAX_HEAD: usize = 16 * 1024;
/// Nor its body (the reads' answers are tens of KB).
const MAX_BODY: usize = 16 * 1024 * 1024;
/// One call's bound, connecting included.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// One keep-alive connection to the server.
pub struct HttpConn {
    stream: TcpStream,
    host: String,
    request: Vec<u8>,
    answer: Vec<u8>,
}

/// An answer: its status and body.
pub struct Answer<'a> {
    pub status: u16,
    pub body: &'a [u8],
}

impl HttpConn {
    /// Connects to `base` (`http://host:port`).
    pub async fn connect(base: &str) -> Result<Self, String> {
        let host = base
            .strip_prefix("http://")
            .ok_or_else(|| format!("{base}: not an http:// address"))?
            .trim_end_matches('/')
            .to_string();
        let stream = tokio::time::timeout(CALL_TIMEOUT, TcpStream::connect(&host))
            .await
            .map_err(|_| format!("connecting to {host}: timed out"))?
            .map_err(|e| format!("connecting to {host}: {e}"))?;
        stream.set_nodelay(true).map_err(|e| e.to_string())?;
        Ok(Self {
            stream,
            host,
            request: Vec::with_capacity(1024),
            answer: Vec::with_capacity(64 * 1024),
        })
    }

    /// POSTs the JSON `body` to `path` with the bearer `token`.
    pub async fn post_json(
        &mut self,
        path: &str,
        token: &str,
        body: &[u8],
    ) -> Result<Answer<'_>, String> {
        use std::io::Write;
        self.request.clear();
        write!(
            self.request,
            "POST {path} HTTP/1.1\r\nhost: {}\r\nauthorization: Bearer {token}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n",
            self.host,
            body.len()
        )
        .map_err(|e| e.to_string())?;
        self.request.extend_from_slice(body);
        let (status, start, end) = tokio::time::timeout(CALL_TIMEOUT, self.exchange())
            .await
            .map_err(|_| format!("{path}: no answer in {CALL_TIMEOUT:?}"))??;
        Ok(Answer {
            status,
            body: &self.answer[start..end],
        })
    }

    /// Writes the request and reads one answer into `self.answer`: its status and where its
    /// body lies.
    async fn exchange(&mut self) -> Result<(u16, usize, usize), String> {
        self.stream
            .write_all(&self.request)
            .await
            .map_err(|e| format!("writing: {e}"))?;
        self.answer.clear();
        let head_end = loop {
            if let Some(i) = find(&self.answer, b"\r\n\r\n") {
                break i + 4;
            }
            if self.answer.len() > MAX_HEAD {
                return Err("an answer's head over 16 KB".into());
            }
            self.read_more().await?;
        };
        let head = std::str::from_utf8(&self.answer[..head_end])
            .map_err(|_| "an answer's head is not text".to_string())?;
        let (status, length) = parse_head(head)?;
        if length > MAX_BODY {
            return Err(format!("an answer of {length} bytes"));
        }
        while self.answer.len() < head_end + length {
            self.read_more().await?;
        }
        Ok((status, head_end, head_end + length))
    }

    async fn read_more(&mut self) -> Result<(), String> {
        let n = self
            .stream
            .read_buf(&mut self.answer)
            .await
            .map_err(|e| format!("reading: {e}"))?;
        if n == 0 {
            return Err("the server closed the connection".into());
        }
        Ok(())
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The status and Content-Length of an answer's head (a chunked answer is refused: the server
/// sends none for these calls).
fn parse_head(head: &str) -> Result<(u16, usize), String> {
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.strip_prefix("HTTP/1.1 "))
        .and_then(|l| l.get(..3))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| format!("no status line in {head:?}"))?;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        if name.eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().ok();
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            return Err(format!("a {} answer", value.trim()));
        }
    }
    let length = length.ok_or_else(|| format!("no content-length in {head:?}"))?;
    Ok((status, length))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_gives_its_status_and_length() {
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 42\r\n\r\n";
        assert_eq!(parse_head(head).unwrap(), (200, 42));
        let refused = "HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n";
        assert_eq!(parse_head(refused).unwrap(), (400, 0));
        assert!(parse_head("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n").is_err());
        assert!(parse_head("HTTP/1.1 200 OK\r\n\r\n").is_err());
        assert!(parse_head("garbage\r\n\r\n").is_err());
        assert_eq!(find(b"ab\r\n\r\ncd", b"\r\n\r\n"), Some(2));
    }
}
