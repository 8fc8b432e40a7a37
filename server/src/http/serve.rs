//! Serving HTTP with every wait bounded. `axum::serve` arms none of hyper's timers, so a client
//! that sends half a header and stalls (slowloris) would hold its connection and task forever;
//! this loop serves each connection with hyper's HTTP/1 builder and a Tokio timer instead:
//!
//! - the request head must arrive within the header timeout (idle keep-alive connections too:
//!   hyper starts that clock when it starts waiting for the next head);
//! - at most `max_connections` connections are served at once; one past it is answered
//!   `503 CONNECTIONS_TOO_MUCH` and closed at once (it never queues);
//! - the body and the handler are bounded by [`limit_layer`]: the whole body within the body
//!   timeout and [`MAX_REQUEST_BODY_BYTES`], all bodies in memory together within
//!   [`MAX_BUFFERED_BODY_BYTES`], then the answer within the request deadline.
//!
//! A connection upgraded to a WebSocket leaves the count when it upgrades: push sockets are
//! capped per account instead (`gateway::push_sockets`).

use std::sync::Arc;
use std::time::Duration;

use application::tl::RpcError;
use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use futures::StreamExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// Time for a request head (request line and headers) to arrive in full, from when the
/// connection opens or the previous answer was written (`PTSLOG_HTTP_HEADER_TIMEOUT_MS`). A real
/// client sends its head in one packet; 10 s covers a slow mobile link, a third of hyper's 30 s
/// default, so stalled connections are let go sooner.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// Time for a request body to arrive in full once its head is in (`PTSLOG_HTTP_BODY_TIMEOUT_MS`).
/// The largest body is [`MAX_REQUEST_BODY_BYTES`]: 10 s is 100 KB/s at worst.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(10);
/// The most a handler may take to answer (`PTSLOG_HTTP_REQUEST_TIMEOUT_MS`); past it the call is
/// answered `503 TIMEOUT`. Above the Postgres statement timeout (10 s) plus the per-account queue
/// wait (2 s), so a cancelled statement answers its own error first.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(15);
/// Connections served at once (`PTSLOG_HTTP_MAX_CONNECTIONS`). Each costs a task, a socket and
/// hyper's buffers (~10 KB); 4096 stays within a default `ulimit -n` of a service unit and far
/// above what the JSON API's clients keep open (push sockets leave the count once upgraded).
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// The largest request body (`413 REQUEST_TOO_LARGE` past it). The largest legitimate body is a
/// `contacts.importContacts` of 1000 contacts (~150 KB) or a 4096-code-point message with 100
/// entities (~30 KB); 1 MiB leaves room and is half axum's implicit 2 MB default.
pub const MAX_REQUEST_BODY_BYTES: usize = 1024 * 1024;
/// Request bodies held in memory at once by all connections of a listener together. Bodies are
/// read before the caller is known, so without it every connection could hold
/// [`MAX_REQUEST_BODY_BYTES`] (4 GiB at the connection cap); past it a body waits for room within
/// its body timeout (then `408`). 64 MiB is over 400 of the largest legitimate bodies at once and
/// thousands of ordinary ones.
pub const MAX_BUFFERED_BODY_BYTES: usize = 64 * 1024 * 1024;
/// How often a flood of refused connections is logged.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);
/// The most time spent writing the refusal to a connection past the cap.
const REFUSAL_WRITE_TIMEOUT: Duration = Duration::from_secs(1);

/// The HTTP front's limits.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    pub header_timeout: Duration,
    pub body_timeout: Duration,
    pub request_timeout: Duration,
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            body_timeout: DEFAULT_BODY_TIMEOUT,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Serves `router` on `listener` until the task is dropped, within `limits`.
pub async fn serve(
    listener: TcpListener,
    router: Router,
    limits: HttpLimits,
) -> std::io::Result<()> {
    let router = limit_layer(router, limits);
    let permits = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    // Refusals are logged at most once per REFUSAL_LOG_EVERY, with the running count.
    let mut refused: u64 = 0;
    let mut last_refusal_log = None;
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: wait for some to close rather than spin.
                tracing::warn!(error = %e, "accepting an HTTP connection failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(permit) = permits.clone().try_acquire_owned() else {
            refused += 1;
            if last_refusal_log.is_none_or(|t: std::time::Instant| t.elapsed() >= REFUSAL_LOG_EVERY)
            {
                tracing::warn!(
                    refused,
                    max = limits.max_connections,
                    "HTTP connections refused: at the connection cap"
                );
                last_refusal_log = Some(std::time::Instant::now());
            }
            tokio::spawn(refuse(stream));
            continue;
        };
        let _ = stream.set_nodelay(true);
        // Handlers that limit per client address (sign-in codes) read it as `ConnectInfo`.
        let service = TowerToHyperService::new(WithPeer {
            router: router.clone(),
            peer,
        });
        let connection = builder
            .serve_connection(TokioIo::new(stream), service)
            .with_upgrades();
        tokio::spawn(async move {
            // Errors here are the client's (a reset, a header timeout): nothing to report.
            let _ = connection.await;
            drop(permit);
        });
    }
}

/// The answer to a connection past the cap: a complete 503 written without reading anything.
async fn refuse(mut stream: TcpStream) {
    let body =
        serde_json::to_string(&RpcError::new(503, "CONNECTIONS_TOO_MUCH")).unwrap_or_default();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(REFUSAL_WRITE_TIMEOUT, async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// Every route behind the body and request bounds.
pub fn limit_layer(router: Router, limits: HttpLimits) -> Router {
    let state = Bounds {
        limits,
        budget: Arc::new(Semaphore::new(MAX_BUFFERED_BODY_BYTES)),
    };
    router.layer(middleware::from_fn_with_state(state, bounded))
}

#[derive(Clone)]
struct Bounds {
    limits: HttpLimits,
    /// [`MAX_BUFFERED_BODY_BYTES`], one permit per byte.
    budget: Arc<Semaphore>,
}

/// Reads the whole body within its time and size budget, then runs the handler within the request
/// deadline. A streamed answer (the admin export) is bounded only until its head is ready.
async fn bounded(State(bounds): State<Bounds>, request: Request, next: Next) -> Response {
    let limits = bounds.limits;
    let (parts, body) = request.into_parts();
    let declared = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_REQUEST_BODY_BYTES as u64) {
        return too_large();
    }
    // The budget's share is held until the answer is ready (the handler holds the body).
    let mut held = None;
    let read = read_body(body, &bounds.budget, &mut held);
    let body = match tokio::time::timeout(limits.body_timeout, read).await {
        Ok(Ok(bytes)) => bytes,
        Ok(Err(BodyError::TooLarge)) => return too_large(),
        Ok(Err(BodyError::Broken(detail))) => {
            return failure(StatusCode::BAD_REQUEST, RpcError::bad_input(detail))
        }
        Err(_) => {
            return failure(
                StatusCode::REQUEST_TIMEOUT,
                RpcError::new(408, "REQUEST_TIMEOUT").with_detail(format!(
                    "the request body did not arrive within {} ms",
                    limits.body_timeout.as_millis()
                )),
            )
        }
    };
    let request = Request::from_parts(parts, Body::from(body));
    let answer = tokio::time::timeout(limits.request_timeout, next.run(request)).await;
    drop(held);
    match answer {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(
                timeout_ms = limits.request_timeout.as_millis() as u64,
                "request answered 503 TIMEOUT: its handler ran past the deadline"
            );
            failure(StatusCode::SERVICE_UNAVAILABLE, timeout_error())
        }
    }
}

/// `503 TIMEOUT`: Telegram's own answer when a call takes too long on its side; clients retry it.
pub fn timeout_error() -> RpcError {
    RpcError::new(503, "TIMEOUT")
}

enum BodyError {
    TooLarge,
    Broken(String),
}

/// The whole body, each chunk paid for from `budget` before it is kept (the permits gather in
/// `held`, which the caller keeps as long as the body lives).
async fn read_body(
    body: Body,
    budget: &Arc<Semaphore>,
    held: &mut Option<OwnedSemaphorePermit>,
) -> Result<Bytes, BodyError> {
    let mut stream = body.into_data_stream();
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| BodyError::Broken(format!("reading the body: {e}")))?;
        if buffer.len() + chunk.len() > MAX_REQUEST_BODY_BYTES {
            return Err(BodyError::TooLarge);
        }
        if !chunk.is_empty() {
            // At most MAX_REQUEST_BODY_BYTES, so it fits a u32; the semaphore is never closed.
            let permit = budget
                .clone()
                .acquire_many_owned(chunk.len() as u32)
                .await
                .map_err(|_| BodyError::Broken("the server is shutting down".into()))?;
            match held {
                Some(all) => all.merge(permit),
                None => *held = Some(permit),
            }
        }
        buffer.extend_from_slice(&chunk);
    }
    Ok(Bytes::from(buffer))
}

fn too_large() -> Response {
    failure(
        StatusCode::PAYLOAD_TOO_LARGE,
        RpcError::new(413, "REQUEST_TOO_LARGE")
            .with_detail(format!("the body exceeds {MAX_REQUEST_BODY_BYTES} bytes")),
    )
}

fn failure(status: StatusCode, error: RpcError) -> Response {
    (status, Json(error)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bodies_in_memory_share_one_budget() {
        let budget = Arc::new(Semaphore::new(1000));
        let mut first = None;
        let body = read_body(Body::from(vec![b' '; 1000]), &budget, &mut first).await;
        assert_eq!(body.ok().map(|b| b.len()), Some(1000));
        assert_eq!(budget.available_permits(), 0);
        // The budget is spent: the next byte waits until the first body is let go.
        let mut second = None;
        let waiting = tokio::time::timeout(
            Duration::from_millis(50),
            read_body(Body::from(vec![b' '; 1]), &budget, &mut second),
        )
        .await;
        assert!(waiting.is_err());
        drop(first);
        let mut third = None;
        let body = read_body(Body::from(vec![b' '; 1]), &budget, &mut third).await;
        assert!(body.is_ok());
        assert_eq!(budget.available_permits(), 999);
    }

    #[tokio::test]
    async fn a_body_is_capped_at_the_limit() {
        let budget = Arc::new(Semaphore::new(MAX_BUFFERED_BODY_BYTES));
        let mut held = None;
        let at = read_body(
            Body::from(vec![0u8; MAX_REQUEST_BODY_BYTES]),
            &budget,
            &mut held,
        )
        .await;
        assert!(at.is_ok());
        let mut held = None;
        let past = read_body(
            Body::from(vec![0u8; MAX_REQUEST_BODY_BYTES + 1]),
            &budget,
            &mut held,
        )
        .await;
        assert!(matches!(past, Err(BodyError::TooLarge)));
    }
}

/// The router, with every request carrying its connection's peer address.
#[derive(Clone)]
struct WithPeer {
    router: Router,
    peer: std::net::SocketAddr,
}

impl<B> tower_service::Service<axum::http::Request<B>> for WithPeer
where
    Router: tower_service::Service<axum::http::Request<B>>,
{
    type Response = <Router as tower_service::Service<axum::http::Request<B>>>::Response;
    type Error = <Router as tower_service::Service<axum::http::Request<B>>>::Error;
    type Future = <Router as tower_service::Service<axum::http::Request<B>>>::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        tower_service::Service::<axum::http::Request<B>>::poll_ready(&mut self.router, cx)
    }

    fn call(&mut self, mut req: axum::http::Request<B>) -> Self::Future {
        req.extensions_mut()
            .insert(axum::extract::ConnectInfo(self.peer));
        self.router.call(req)
    }
}
