//! The push WebSocket's token: in `Authorization: Bearer`, in `?token=`, or in the first frame
//! `{"token":"…"}` within `FIRST_FRAME_TIMEOUT`; a wrong token is refused every way, and a socket
//! that never names itself is closed.

use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use ptslog_server::http::updates::{
    CLOSE_UNAUTHORIZED, FIRST_FRAME_TIMEOUT, MAX_TOKEN_FRAME_BYTES,
};
use ptslog_tests::TestServer;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn devices_online(server: &TestServer) -> i64 {
    let text = server
        .http
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("ptslog_devices_online "))
        .and_then(|n| n.trim().parse().ok())
        .expect("devices_online metric")
}

/// Waits until the hub has `n` devices (a socket registers just after its token is accepted).
async fn wait_online(server: &TestServer, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while devices_online(server).await != n {
        assert!(Instant::now() < deadline, "expected {n} devices online");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn url(server: &TestServer, query: &str) -> String {
    format!(
        "{}/v1/updates{query}",
        server.base.replacen("http://", "ws://", 1)
    )
}

async fn connect(
    server: &TestServer,
    query: &str,
    bearer: Option<&str>,
) -> Result<Ws, tokio_tungstenite::tungstenite::Error> {
    let mut request = url(server, query).into_client_request().unwrap();
    if let Some(t) = bearer {
        request
            .headers_mut()
            .insert("Authorization", format!("Bearer {t}").parse().unwrap());
    }
    tokio_tungstenite::connect_async(request)
        .await
        .map(|(ws, _)| ws)
}

fn refused_with_401(result: Result<Ws, tokio_tungstenite::tungstenite::Error>) {
    match result {
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => assert_eq!(r.status(), 401),
        other => panic!(
            "expected 401 before the upgrade, got {:?}",
            other.map(|_| ())
        ),
    }
}

/// Reads until the close frame: answers the error text sent before it and the close code.
async fn closed_with(ws: &mut Ws) -> (String, Option<u16>) {
    let mut text = String::new();
    let read = async {
        while let Some(msg) = ws.next().await {
            match msg {
                Ok(Message::Text(t)) => text = t.to_string(),
                Ok(Message::Close(frame)) => return frame.map(|f| u16::from(f.code)),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
        None
    };
    let code = tokio::time::timeout(FIRST_FRAME_TIMEOUT + Duration::from_secs(3), read)
        .await
        .expect("the server closes the socket");
    (text, code)
}

#[tokio::test]
async fn the_push_token_comes_from_a_header_the_query_or_the_first_frame() {
    let server = TestServer::start().await;
    let alice = server.login("+15557100001", "Alice").await;
    assert_eq!(devices_online(&server).await, 0);

    let _by_header = connect(&server, "", Some(&alice.token))
        .await
        .expect("header");
    wait_online(&server, 1).await;
    let _by_query = connect(&server, &format!("?token={}", alice.token), None)
        .await
        .expect("query");
    wait_online(&server, 2).await;
    let mut by_frame = connect(&server, "", None)
        .await
        .expect("upgrade without a token");
    by_frame
        .send(Message::Text(
            format!(r#"{{"token":"{}"}}"#, alice.token).into(),
        ))
        .await
        .unwrap();
    wait_online(&server, 3).await;
    // At the size limit (padded with JSON whitespace) still read as a token frame.
    let frame = format!(r#"{{"token":"{}"}}"#, alice.token);
    let padded = format!("{}{frame}", " ".repeat(MAX_TOKEN_FRAME_BYTES - frame.len()));
    assert_eq!(padded.len(), MAX_TOKEN_FRAME_BYTES);
    let mut at_limit = connect(&server, "", None).await.unwrap();
    at_limit
        .send(Message::Text(padded.clone().into()))
        .await
        .unwrap();
    wait_online(&server, 4).await;

    // Wrong tokens: refused before the upgrade in a header or the query…
    refused_with_401(connect(&server, "", Some("0123456789abcdef")).await);
    refused_with_401(connect(&server, "?token=0123456789abcdef", None).await);
    // …and with an rpc_error frame and close 4401 in the first frame.
    for first in [
        r#"{"token":"0123456789abcdef"}"#.to_string(),
        r#"{"token":""}"#.to_string(),
        format!(r#"{{"token":"{}","extra":1}}"#, alice.token),
        "not json".to_string(),
        format!(" {padded}"), // one byte past the limit, though the token is right
    ] {
        let mut ws = connect(&server, "", None).await.unwrap();
        ws.send(Message::Text(first.clone().into())).await.unwrap();
        let (text, code) = closed_with(&mut ws).await;
        assert_eq!(code, Some(CLOSE_UNAUTHORIZED), "{first}");
        assert!(text.contains("AUTH_KEY_UNREGISTERED"), "{first}: {text}");
    }
    assert_eq!(
        devices_online(&server).await,
        4,
        "no refused socket registered"
    );
    server.stop().await;
}

#[tokio::test]
async fn a_socket_that_never_sends_its_token_is_closed() {
    let server = TestServer::start().await;
    let started = Instant::now();
    let mut silent = connect(&server, "", None).await.unwrap();
    let (text, code) = closed_with(&mut silent).await;
    assert_eq!(code, Some(CLOSE_UNAUTHORIZED));
    assert!(text.contains("AUTH_KEY_UNREGISTERED"), "{text}");
    assert!(started.elapsed() >= FIRST_FRAME_TIMEOUT - Duration::from_millis(100));
    assert_eq!(devices_online(&server).await, 0);
    server.stop().await;
}
