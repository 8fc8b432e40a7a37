//! `PUT /v1/upload/<file_id>/<part>`: one upload part as the raw request body, so a web client
//! sends bytes, not hex in JSON (a 512 KiB part as hex would not fit the body cap). Without a
//! query it is upload.saveFilePart; with `?total_parts=N` upload.saveBigFilePart. Answers
//! `{"_": "boolTrue"}` like the RPC. The body cap (`serve::MAX_REQUEST_BODY_BYTES`, 1 MiB) is
//! above the largest part, so a part too big is answered `FILE_PART_TOO_BIG`, not `413`.

use application::commands::save_file_part::SavePart;
use application::tl::RpcError;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use axum::Json;
use domain::media::UploadKind;
use serde_json::{json, Value};

use super::auth::caller;
use super::reply::RpcFailure;
use super::HttpState;

pub async fn put_part(
    State(state): State<HttpState>,
    Path((file_id, part)): Path<(String, String)>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, RpcFailure> {
    let bad = |what: &str| RpcFailure(RpcError::bad_input(what.to_string()));
    let file_id: i64 = file_id.parse().map_err(|_| bad("file_id must be a long"))?;
    let part: i32 = part
        .parse()
        .map_err(|_| RpcFailure(RpcError::new(400, "FILE_PART_INVALID")))?;
    let kind = match query.as_deref() {
        None | Some("") => UploadKind::Small,
        Some(q) => {
            let total = q
                .strip_prefix("total_parts=")
                .filter(|v| !v.contains('&'))
                .ok_or_else(|| bad("the only query parameter is total_parts"))?;
            let total_parts = total
                .parse()
                .map_err(|_| RpcFailure(RpcError::new(400, "FILE_PARTS_INVALID")))?;
            UploadKind::Big { total_parts }
        }
    };
    let caller = caller(&state.app, &headers).await?;
    let _permit = state.app.account_requests().acquire(caller.user_id).await?;
    state
        .app
        .save_file_part(
            &caller,
            SavePart {
                file_id,
                part,
                kind,
                bytes: body.to_vec(),
            },
        )
        .await?;
    Ok(Json(json!({"_": "boolTrue"})))
}
