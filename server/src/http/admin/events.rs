//! `GET /admin/events`: the same selection and lines as `ptslog events export`, streamed as a
//! chunked body while the rows are read (constant memory). Query parameters: `user` (repeatable or
//! comma-separated; none or `all`: every account), `from_pts`, `to_pts`, `since`, `until` (RFC
//! 3339), `kind` (repeatable), `format` (`ndjson`, the default, or `csv`), `raw` (`true`: payloads as
//! stored). A failure after the first bytes ends the body without its final chunk, so a reader
//! sees a broken transfer rather than a short export.

use application::tl::RpcError;
use axum::body::{Body, Bytes};
use axum::extract::{RawQuery, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use infrastructure::postgres::log_export::LogExport;
use tokio::sync::mpsc;

use super::AdminState;
use crate::events::export::{export, ExportError, ExportFormat, LineEncoder};
use crate::events::filter::FilterText;

/// Chunks buffered between the reader and a slow client.
const BUFFERED_CHUNKS: usize = 4;

struct Request {
    filter: FilterText,
    encoder: LineEncoder,
}

fn parse(query: Option<&str>) -> Result<Request, String> {
    let mut filter = FilterText::default();
    let mut format = ExportFormat::Ndjson;
    let mut raw = false;
    let int = |k: &str, v: &str| {
        v.parse::<i32>()
            .map_err(|_| format!("{k}: {v:?} is not an integer"))
    };
    for (k, v) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "user" => filter.users.push(v.into_owned()),
            "kind" => filter.kinds.push(v.into_owned()),
            "from_pts" => filter.from_pts = Some(int("from_pts", &v)?),
            "to_pts" => filter.to_pts = Some(int("to_pts", &v)?),
            "since" => filter.since = Some(v.into_owned()),
            "until" => filter.until = Some(v.into_owned()),
            "format" => {
                format = match v.as_ref() {
                    "ndjson" => ExportFormat::Ndjson,
                    "csv" => ExportFormat::Csv,
                    other => return Err(format!("format: {other:?} is not ndjson or csv")),
                }
            }
            "raw" => {
                raw = match v.as_ref() {
                    "true" | "1" => true,
                    "false" | "0" => false,
                    other => return Err(format!("raw: {other:?} is not true or false")),
                }
            }
            other => return Err(format!("unknown parameter {other:?}")),
        }
    }
    Ok(Request {
        filter,
        encoder: LineEncoder { format, raw },
    })
}

fn bad_request(detail: String) -> Response {
    (StatusCode::BAD_REQUEST, Json(RpcError::bad_input(detail))).into_response()
}

pub async fn events(State(state): State<AdminState>, RawQuery(query): RawQuery) -> Response {
    let request = match parse(query.as_deref()) {
        Ok(r) => r,
        Err(detail) => return bad_request(detail),
    };
    let filter = match request.filter.parse() {
        Ok(f) => f,
        Err(e) => return bad_request(e.to_string()),
    };
    let encoder = request.encoder;
    let (tx, rx) = mpsc::channel::<Result<Bytes, std::io::Error>>(BUFFERED_CHUNKS);
    let pool = state.pool.clone();
    tokio::spawn(async move {
        let plan = LogExport::new(filter);
        let outcome = export(&pool, &plan, encoder, |chunk| {
            // A full channel means a slow client: wait for it (this is what bounds memory). A
            // closed one means it went away: stop reading.
            let tx = tx.clone();
            async move {
                tx.send(Ok(Bytes::from(chunk)))
                    .await
                    .map_err(|_| ExportError::Write(std::io::ErrorKind::BrokenPipe.into()))
            }
        })
        .await;
        if let Err(e) = outcome {
            if !matches!(&e, ExportError::Write(w) if w.kind() == std::io::ErrorKind::BrokenPipe) {
                tracing::warn!(error = %e, "admin export failed");
                let _ = tx.send(Err(std::io::Error::other(e.to_string()))).await;
            }
        }
    });
    let body = Body::from_stream(futures::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    }));
    (
        [(header::CONTENT_TYPE, encoder.format.content_type())],
        body,
    )
        .into_response()
}
