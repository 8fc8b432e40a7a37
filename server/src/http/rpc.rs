//! `POST /v1/rpc/<method>`: one table from TL method names to application handlers.

use application::commands::save_file_part::{SaveBigFilePart, SaveFilePart};
use application::commands::send_media::{SendMedia, SendMultiMedia, UploadMedia};
use application::commands::two_step::{TwoStepError, UpdatePasswordSettings};
use application::commands::{
    block::Block, delete_history::DeleteHistory, delete_messages::DeleteMessages,
    edit_message::EditMessage, forward_messages::ForwardMessages, read_history::ReadHistory,
    read_message_contents::ReadMessageContents, send_message::SendMessage,
};
use application::commands::{
    contacts::{AddContact, DeleteContacts, HidePeerSettingsBar, ImportContacts},
    dialog_filters::{ToggleDialogFilterTags, UpdateDialogFilter, UpdateDialogFiltersOrder},
    edit_peer_folders::EditPeerFolders,
    mark_dialog_unread::MarkDialogUnread,
    notify_settings::UpdateNotifySettings,
    pin_dialogs::{ReorderPinnedDialogs, ToggleDialogPin},
};
use application::queries::dialog_organization::{GetContacts, GetPeerSettings, GetPinnedDialogs};
use application::queries::get_file::GetFile;
use application::queries::{
    get_blocked::GetBlocked, get_dialogs::GetDialogs, get_difference::GetDifference,
    get_history::GetHistory, get_messages::GetMessages, get_notify_settings::GetNotifySettings,
    get_outbox_read_date::GetOutboxReadDate, get_peer_dialogs::GetPeerDialogs, get_users::GetUsers,
    resolve_phone::ResolvePhone, search::Search,
};
use application::tl::RpcError;
use application::{App, AppError, Caller};
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde::de::DeserializeOwned;
use serde_json::{json, Value};

use super::auth::caller;
use super::reply::{ok, RpcFailure};
use super::HttpState;

/// Every method the JSON API serves (docs/json-api.md lists them too).
pub const METHODS: &[&str] = &[
    "messages.sendMessage",
    "messages.forwardMessages",
    "messages.editMessage",
    "messages.deleteMessages",
    "messages.deleteHistory",
    "messages.readHistory",
    "messages.readMessageContents",
    "messages.getOutboxReadDate",
    "messages.getDialogs",
    "messages.getPeerDialogs",
    "messages.getHistory",
    "messages.getMessages",
    "messages.search",
    "updates.getState",
    "updates.getDifference",
    "users.getUsers",
    "contacts.resolvePhone",
    "contacts.block",
    "contacts.unblock",
    "contacts.getBlocked",
    "messages.toggleDialogPin",
    "messages.reorderPinnedDialogs",
    "messages.getPinnedDialogs",
    "messages.markDialogUnread",
    "messages.getDialogUnreadMarks",
    "folders.editPeerFolders",
    "messages.getDialogFilters",
    "messages.updateDialogFilter",
    "messages.updateDialogFiltersOrder",
    "messages.toggleDialogFilterTags",
    "contacts.importContacts",
    "contacts.addContact",
    "contacts.deleteContacts",
    "contacts.getContacts",
    "contacts.resetSaved",
    "messages.getPeerSettings",
    "messages.hidePeerSettingsBar",
    "account.updateNotifySettings",
    "account.getNotifySettings",
    "account.getPassword",
    "account.updatePasswordSettings",
    "account.getAuthorizations",
    "account.resetAuthorization",
    // media: messages
    "messages.sendMedia",
    "messages.sendMultiMedia",
    "messages.uploadMedia",
    "upload.getFile",
    // TEMPORARY (h/media, until h/files' registration is merged): the upload calls.
    "upload.saveFilePart",
    "upload.saveBigFilePart",
];

/// Parses a JSON body into a request; an empty body is `{}` (methods without parameters).
/// Parameters are named: a JSON array (positional fields, which serde would accept) is refused.
pub fn parse<T: DeserializeOwned>(body: &[u8]) -> Result<T, RpcFailure> {
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        body
    };
    if body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
        return Err(RpcFailure(RpcError::bad_input(
            "the parameters must be a JSON object",
        )));
    }
    serde_json::from_slice(body).map_err(|e| RpcFailure(RpcError::bad_input(e.to_string())))
}

pub async fn rpc(
    State(state): State<HttpState>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, RpcFailure> {
    if !METHODS.contains(&method.as_str()) {
        return Err(RpcFailure(RpcError::method_invalid(&method)));
    }
    let caller = caller(&state.app, &headers).await?;
    // Held until the answer is ready: one account cannot hold every database connection.
    let _permit = state.app.account_requests().acquire(caller.user_id).await?;
    dispatch(&state.app, &caller, &method, &body)
        .await
        .map(Json)
}

/// Two-step verification's errors, with a storage failure logged like the others.
fn two_step_failure(e: TwoStepError) -> RpcFailure {
    if let TwoStepError::App(AppError::Store(inner)) = &e {
        tracing::error!(error = %inner, "storage failure (two-step verification)");
    }
    RpcFailure(RpcError::from(&e))
}

fn bool_value(b: bool) -> Value {
    json!({ "_": if b { "boolTrue" } else { "boolFalse" } })
}

pub(crate) async fn dispatch(
    app: &App,
    c: &Caller,
    method: &str,
    body: &[u8],
) -> Result<Value, RpcFailure> {
    match method {
        "messages.sendMessage" => ok(&app.send_message(c, parse::<SendMessage>(body)?).await?),
        "messages.forwardMessages" => ok(&app
            .forward_messages(c, parse::<ForwardMessages>(body)?)
            .await?),
        "messages.editMessage" => ok(&app.edit_message(c, parse::<EditMessage>(body)?).await?),
        "messages.deleteMessages" => ok(&app
            .delete_messages(c, parse::<DeleteMessages>(body)?)
            .await?),
        "messages.deleteHistory" => {
            ok(&app.delete_history(c, parse::<DeleteHistory>(body)?).await?)
        }
        "messages.readHistory" => ok(&app.read_history(c, parse::<ReadHistory>(body)?).await?),
        "messages.readMessageContents" => ok(&app
            .read_message_contents(c, parse::<ReadMessageContents>(body)?)
            .await?),
        "messages.getOutboxReadDate" => ok(&app
            .get_outbox_read_date(c, parse::<GetOutboxReadDate>(body)?)
            .await?),
        "messages.getDialogs" => ok(&app.get_dialogs(c, parse::<GetDialogs>(body)?).await?),
        "messages.getPeerDialogs" => ok(&app
            .get_peer_dialogs(c, parse::<GetPeerDialogs>(body)?)
            .await?),
        "messages.getHistory" => ok(&app.get_history(c, parse::<GetHistory>(body)?).await?),
        "messages.getMessages" => ok(&app.get_messages(c, parse::<GetMessages>(body)?).await?),
        "messages.search" => ok(&app.search(c, parse::<Search>(body)?).await?),
        "updates.getState" => {
            // No parameters, but the body must still be a JSON object (or empty).
            parse::<serde_json::Map<String, Value>>(body)?;
            ok(&app.get_state(c).await?)
        }
        "updates.getDifference" => {
            ok(&app.get_difference(c, parse::<GetDifference>(body)?).await?)
        }
        "users.getUsers" => ok(&app.get_users(c, parse::<GetUsers>(body)?).await?),
        "contacts.resolvePhone" => ok(&app.resolve_phone(c, parse::<ResolvePhone>(body)?).await?),
        "contacts.block" => Ok(bool_value(
            app.set_blocked(c, parse::<Block>(body)?, true).await?,
        )),
        "contacts.unblock" => Ok(bool_value(
            app.set_blocked(c, parse::<Block>(body)?, false).await?,
        )),
        "contacts.getBlocked" => ok(&app.get_blocked(c, parse::<GetBlocked>(body)?).await?),
        "messages.toggleDialogPin" => Ok(bool_value(
            app.toggle_dialog_pin(c, parse::<ToggleDialogPin>(body)?)
                .await?,
        )),
        "messages.reorderPinnedDialogs" => Ok(bool_value(
            app.reorder_pinned_dialogs(c, parse::<ReorderPinnedDialogs>(body)?)
                .await?,
        )),
        "messages.getPinnedDialogs" => ok(&app
            .get_pinned_dialogs(c, parse::<GetPinnedDialogs>(body)?)
            .await?),
        "messages.markDialogUnread" => Ok(bool_value(
            app.mark_dialog_unread(c, parse::<MarkDialogUnread>(body)?)
                .await?,
        )),
        "messages.getDialogUnreadMarks" => {
            parse::<serde_json::Map<String, Value>>(body)?;
            ok(&app.get_dialog_unread_marks(c).await?)
        }
        "folders.editPeerFolders" => ok(&app
            .edit_peer_folders(c, parse::<EditPeerFolders>(body)?)
            .await?),
        "messages.getDialogFilters" => {
            parse::<serde_json::Map<String, Value>>(body)?;
            ok(&app.get_dialog_filters(c).await?)
        }
        "messages.updateDialogFilter" => Ok(bool_value(
            app.update_dialog_filter(c, parse::<UpdateDialogFilter>(body)?)
                .await?,
        )),
        "messages.updateDialogFiltersOrder" => Ok(bool_value(
            app.update_dialog_filters_order(c, parse::<UpdateDialogFiltersOrder>(body)?)
                .await?,
        )),
        "messages.toggleDialogFilterTags" => Ok(bool_value(
            app.toggle_dialog_filter_tags(c, parse::<ToggleDialogFilterTags>(body)?)
                .await?,
        )),
        "contacts.importContacts" => ok(&app
            .import_contacts(c, parse::<ImportContacts>(body)?)
            .await?),
        "contacts.addContact" => ok(&app.add_contact(c, parse::<AddContact>(body)?).await?),
        "contacts.deleteContacts" => ok(&app
            .delete_contacts(c, parse::<DeleteContacts>(body)?)
            .await?),
        "contacts.getContacts" => ok(&app.get_contacts(c, parse::<GetContacts>(body)?).await?),
        "contacts.resetSaved" => {
            parse::<serde_json::Map<String, Value>>(body)?;
            Ok(bool_value(app.reset_saved_contacts(c).await?))
        }
        "messages.getPeerSettings" => ok(&app
            .get_peer_settings(c, parse::<GetPeerSettings>(body)?)
            .await?),
        "messages.hidePeerSettingsBar" => Ok(bool_value(
            app.hide_peer_settings_bar(c, parse::<HidePeerSettingsBar>(body)?)
                .await?,
        )),
        "account.updateNotifySettings" => Ok(bool_value(
            app.update_notify_settings(c, parse::<UpdateNotifySettings>(body)?)
                .await?,
        )),
        "account.getNotifySettings" => ok(&app
            .get_notify_settings(c, parse::<GetNotifySettings>(body)?)
            .await?),
        "account.getPassword" => {
            parse::<serde_json::Map<String, Value>>(body)?;
            app.get_password(c.user_id).await.map_err(two_step_failure)
        }
        "account.updatePasswordSettings" => Ok(bool_value(
            app.update_password_settings(c.user_id, parse::<UpdatePasswordSettings>(body)?)
                .await
                .map_err(two_step_failure)?,
        )),
        "account.getAuthorizations" => {
            parse::<serde_json::Map<String, Value>>(body)?;
            super::sessions::get_authorizations(app, c).await
        }
        "account.resetAuthorization" => {
            let req = parse::<super::sessions::ResetAuthorization>(body)?;
            app.reset_authorization(c, req.hash).await?;
            Ok(bool_value(true))
        }
        // media: messages
        "messages.sendMedia" => ok(&app.send_media(c, parse::<SendMedia>(body)?).await?),
        "messages.sendMultiMedia" => ok(&app
            .send_multi_media(c, parse::<SendMultiMedia>(body)?)
            .await?),
        "messages.uploadMedia" => ok(&app.upload_media(c, parse::<UploadMedia>(body)?).await?),
        "upload.getFile" => ok(&app.get_file(c, parse::<GetFile>(body)?).await?),
        // TEMPORARY (h/media, until h/files' registration is merged).
        "upload.saveFilePart" => {
            app.save_file_part(c, parse::<SaveFilePart>(body)?.into())
                .await?;
            Ok(bool_value(true))
        }
        "upload.saveBigFilePart" => {
            app.save_file_part(c, parse::<SaveBigFilePart>(body)?.into())
                .await?;
            Ok(bool_value(true))
        }
        other => Err(RpcFailure(RpcError::method_invalid(other))),
    }
}
