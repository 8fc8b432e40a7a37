//! `GET /v1/files/photo/<id>` and `GET /v1/files/document/<id>` with the query
//! `access_hash=&file_reference=&thumb_size=`: the file an `inputPhotoFileLocation` or
//! `inputDocumentFileLocation` names, as raw bytes (docs/json-api.md, "Downloads"). The same
//! location resolution and access checks as upload.getFile; one `Range: bytes=` range answered
//! `206` (several, or one that cannot be satisfied, `416`); the body streamed in pieces of at most
//! `DOWNLOAD_CHUNK_BYTES`, each read from the store only when the connection takes it.

use std::ops::RangeInclusive;

use application::queries::download_file::{Download, DOWNLOAD_CHUNK_BYTES};
use application::queries::get_file::InputFileLocation;
use application::tl::RpcError;
use application::App;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::auth::caller;
use super::reply::RpcFailure;
use super::HttpState;

#[derive(Debug, Deserialize)]
pub struct LocationQuery {
    access_hash: i64,
    /// Hex, as the media objects carry it.
    #[serde(default)]
    file_reference: String,
    /// A photo size's or a document thumbnail's type; none: the largest size, or the document.
    #[serde(default)]
    thumb_size: String,
}

fn bad(what: &str) -> RpcFailure {
    RpcFailure(RpcError::bad_input(what.to_string()))
}

fn location(kind: &str, id: &str, q: LocationQuery) -> Result<InputFileLocation, RpcFailure> {
    // An id that is not a long names no file: the same answer as an unknown one.
    let id: i64 = id
        .parse()
        .map_err(|_| RpcFailure(RpcError::new(400, "FILE_ID_INVALID")))?;
    let LocationQuery {
        access_hash,
        file_reference,
        thumb_size,
    } = q;
    match kind {
        "photo" => Ok(InputFileLocation::Photo {
            id,
            access_hash,
            file_reference,
            thumb_size,
        }),
        "document" => Ok(InputFileLocation::Document {
            id,
            access_hash,
            file_reference,
            thumb_size,
        }),
        _ => Err(bad("files are photo/<id> or document/<id>")),
    }
}

pub async fn get_file(
    State(state): State<HttpState>,
    Path((kind, id)): Path<(String, String)>,
    query: Result<Query<LocationQuery>, axum::extract::rejection::QueryRejection>,
    headers: HeaderMap,
) -> Result<Response, RpcFailure> {
    let Query(query) = query.map_err(|e| bad(&format!("query: {e}")))?;
    let location = location(&kind, &id, query)?;
    let caller = caller(&state.app, &headers).await?;
    let download = {
        // The permit covers the checks only: the body is paced by the client, not by us.
        let _permit = state.app.account_requests().acquire(caller.user_id).await?;
        state.app.open_download(&caller, location).await?
    };
    let range = match headers.get(header::RANGE) {
        None => None,
        Some(value) => match one_range(value, download.size) {
            Some(range) => Some(range),
            None => return Ok(unsatisfiable(download.size)),
        },
    };
    Ok(respond(state.app, download, range))
}

/// The one satisfiable range a `Range` header asks for; `None` for a malformed header, several
/// ranges, or a range past the end (all `416`, as tower-http's file service answers).
fn one_range(value: &HeaderValue, size: u64) -> Option<RangeInclusive<u64>> {
    let ranges = http_range_header::parse_range_header(value.to_str().ok()?)
        .ok()?
        .validate(size)
        .ok()?;
    match ranges.as_slice() {
        [range] => Some(range.clone()),
        _ => None,
    }
}

fn unsatisfiable(size: u64) -> Response {
    (
        StatusCode::RANGE_NOT_SATISFIABLE,
        [
            (header::CONTENT_RANGE, format!("bytes */{size}")),
            (header::ACCEPT_RANGES, "bytes".to_string()),
        ],
    )
        .into_response()
}

fn respond(app: App, download: Download, range: Option<RangeInclusive<u64>>) -> Response {
    let size = download.size;
    let (status, start, end) = match &range {
        Some(r) => (StatusCode::PARTIAL_CONTENT, *r.start(), *r.end() + 1),
        None => (StatusCode::OK, 0, size),
    };
    // A mime type the client chose that is no header value is served as plain bytes.
    let content_type = HeaderValue::from_str(&download.mime_type)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let key = download.key;
    let body = futures::stream::try_unfold(start, move |pos| {
        let app = app.clone();
        async move {
            if pos >= end {
                return Ok(None);
            }
            let want = u32::try_from(end - pos)
                .unwrap_or(u32::MAX)
                .min(DOWNLOAD_CHUNK_BYTES);
            let bytes = app.read_download_chunk(&key, pos, want).await?;
            if bytes.is_empty() {
                // The blob is shorter than its size said: end the body short (the client sees a
                // truncated response) rather than loop.
                return Err(application::AppError::from(
                    domain::media::FileError::FileIdInvalid,
                ));
            }
            let next = pos + bytes.len() as u64;
            Ok(Some((Bytes::from(bytes), next)))
        }
    });
    let mut response = Response::new(Body::from_stream(body));
    *response.status_mut() = status;
    let h = response.headers_mut();
    h.insert(header::CONTENT_TYPE, content_type);
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(end - start));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    // Files are private to who may see them, and their mime type is the sender's word: never
    // cached by a shared cache, never sniffed or run as a page of this origin.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("private"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("sandbox"),
    );
    if range.is_some() {
        let value = format!("bytes {start}-{}/{size}", end - 1);
        h.insert(
            header::CONTENT_RANGE,
            HeaderValue::from_str(&value).expect("digits are a header value"),
        );
    }
    response
}
