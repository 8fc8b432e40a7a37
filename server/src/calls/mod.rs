//! The one call path of both fronts: a table from TL method names to a typed request, its
//! application handler and its typed answer. The JSON API (`http::rpc`) parses its body bytes
//! straight into the request and serializes the answer straight to the response; MTProto
//! (`mtproto::calls`) turns its decoded TL object into the request with `serde_json::from_value`
//! and writes the answer straight as TL in the client's layer. Neither front knows the other.
//!
//! Adding a method: write its handler in `application` (a `Deserialize` request, a `Serialize`
//! TL-shaped answer; `tl::Bool` for a `Bool`, [`NoParams`] when it takes none), add one line to
//! the table below (`"ns.method" => Variant(r: Request) => app.handler(c, r).await?,`; `?` maps
//! `AppError` to its TL error), and a row in docs/json-api.md's Methods table (a test checks it).
//! Both fronts serve it from then on (MTProto wherever the client's schema has the method).

mod answer;
mod failure;
mod params;
mod sign_in;

pub use answer::{JsonBytes, Render, TlBytes};
pub use failure::Failure;
pub use params::{JsonBody, Params};
pub use sign_in::{SignInAnswer, SignInCall, SIGN_IN_METHODS};

use application::commands::contacts::{
    AddContact, DeleteContacts, HidePeerSettingsBar, ImportContacts,
};
use application::commands::dialog_filters::{
    ToggleDialogFilterTags, UpdateDialogFilter, UpdateDialogFiltersOrder,
};
use application::commands::pin_dialogs::{ReorderPinnedDialogs, ToggleDialogPin};
use application::commands::profile_photos::{DeletePhotos, UpdateProfilePhoto, UploadProfilePhoto};
use application::commands::save_file_part::{SaveBigFilePart, SaveFilePart};
use application::commands::send_media::{SendMedia, SendMultiMedia, UploadMedia};
use application::commands::sessions::ResetAuthorization;
use application::commands::two_step::UpdatePasswordSettings;
use application::commands::{
    block::Block, delete_history::DeleteHistory, delete_messages::DeleteMessages,
    edit_message::EditMessage, edit_peer_folders::EditPeerFolders,
    forward_messages::ForwardMessages, mark_dialog_unread::MarkDialogUnread,
    notify_settings::UpdateNotifySettings, read_history::ReadHistory,
    read_message_contents::ReadMessageContents, send_message::SendMessage,
};
use application::queries::dialog_organization::{GetContacts, GetPeerSettings, GetPinnedDialogs};
use application::queries::{
    get_blocked::GetBlocked, get_dialogs::GetDialogs, get_difference::GetDifference,
    get_file::GetFile, get_full_user::GetFullUser, get_history::GetHistory,
    get_messages::GetMessages, get_notify_settings::GetNotifySettings,
    get_outbox_read_date::GetOutboxReadDate, get_peer_dialogs::GetPeerDialogs,
    get_user_photos::GetUserPhotos, get_users::GetUsers, resolve_phone::ResolvePhone,
    search::Search,
};
use application::tl::{Bool, RpcError};
use application::{App, Caller};
use serde::Deserialize;

/// The parameters of a method that takes none: any JSON object (unknown fields are ignored, as
/// by every request).
#[derive(Debug, Deserialize)]
pub struct NoParams {}

/// Declares the table: [`METHODS`], one [`Request`] variant per method, the parse by name and
/// the run of each handler.
macro_rules! methods {
    (|$app:ident, $c:ident| $( $name:literal => $variant:ident($r:ident: $req:ty) => $run:expr ),+ $(,)?) => {
        /// Every method both fronts serve, by TL name (docs/json-api.md lists them too).
        pub const METHODS: &[&str] = &[$($name),+];

        /// A call's typed parameters: one variant per method.
        pub enum Request {
            $( $variant($req), )+
        }

        impl Request {
            /// The request of `method` from its parameters; `400 METHOD_INVALID` for a name not
            /// in the table.
            pub fn parse(method: &str, params: impl Params) -> Result<Self, Failure> {
                match method {
                    $( $name => params.parse().map(Request::$variant), )+
                    _ => Err(Failure(RpcError::method_invalid(method))),
                }
            }

            /// The method's TL name.
            pub fn method(&self) -> &'static str {
                match self {
                    $( Request::$variant(_) => $name, )+
                }
            }

            /// Runs the handler and renders its answer.
            async fn run<R: Render>(self, $app: &App, $c: &Caller, render: R) -> Result<R::Out, Failure> {
                match self {
                    $( Request::$variant($r) => render.render(&$run), )+
                }
            }
        }
    };
}

methods! { |app, c|
    "messages.sendMessage" => SendMessage(r: SendMessage) => app.send_message(c, r).await?,
    "messages.forwardMessages" => ForwardMessages(r: ForwardMessages) => app.forward_messages(c, r).await?,
    "messages.editMessage" => EditMessage(r: EditMessage) => app.edit_message(c, r).await?,
    "messages.deleteMessages" => DeleteMessages(r: DeleteMessages) => app.delete_messages(c, r).await?,
    "messages.deleteHistory" => DeleteHistory(r: DeleteHistory) => app.delete_history(c, r).await?,
    "messages.readHistory" => ReadHistory(r: ReadHistory) => app.read_history(c, r).await?,
    "messages.readMessageContents" => ReadMessageContents(r: ReadMessageContents) => app.read_message_contents(c, r).await?,
    "messages.getOutboxReadDate" => GetOutboxReadDate(r: GetOutboxReadDate) => app.get_outbox_read_date(c, r).await?,
    "messages.getDialogs" => GetDialogs(r: GetDialogs) => app.get_dialogs(c, r).await?,
    "messages.getPeerDialogs" => GetPeerDialogs(r: GetPeerDialogs) => app.get_peer_dialogs(c, r).await?,
    "messages.getHistory" => GetHistory(r: GetHistory) => app.get_history(c, r).await?,
    "messages.getMessages" => GetMessages(r: GetMessages) => app.get_messages(c, r).await?,
    "messages.search" => Search(r: Search) => app.search(c, r).await?,
    "updates.getState" => GetState(_r: NoParams) => app.get_state(c).await?,
    "updates.getDifference" => GetDifference(r: GetDifference) => app.get_difference(c, r).await?,
    "users.getUsers" => GetUsers(r: GetUsers) => app.get_users(c, r).await?,
    "users.getFullUser" => GetFullUser(r: GetFullUser) => app.get_full_user(c, r).await?,
    "contacts.resolvePhone" => ResolvePhone(r: ResolvePhone) => app.resolve_phone(c, r).await?,
    "contacts.block" => Block(r: Block) => Bool(app.set_blocked(c, r, true).await?),
    "contacts.unblock" => Unblock(r: Block) => Bool(app.set_blocked(c, r, false).await?),
    "contacts.getBlocked" => GetBlocked(r: GetBlocked) => app.get_blocked(c, r).await?,
    "messages.toggleDialogPin" => ToggleDialogPin(r: ToggleDialogPin) => Bool(app.toggle_dialog_pin(c, r).await?),
    "messages.reorderPinnedDialogs" => ReorderPinnedDialogs(r: ReorderPinnedDialogs) => Bool(app.reorder_pinned_dialogs(c, r).await?),
    "messages.getPinnedDialogs" => GetPinnedDialogs(r: GetPinnedDialogs) => app.get_pinned_dialogs(c, r).await?,
    "messages.markDialogUnread" => MarkDialogUnread(r: MarkDialogUnread) => Bool(app.mark_dialog_unread(c, r).await?),
    "messages.getDialogUnreadMarks" => GetDialogUnreadMarks(_r: NoParams) => app.get_dialog_unread_marks(c).await?,
    "folders.editPeerFolders" => EditPeerFolders(r: EditPeerFolders) => app.edit_peer_folders(c, r).await?,
    "messages.getDialogFilters" => GetDialogFilters(_r: NoParams) => app.get_dialog_filters(c).await?,
    "messages.updateDialogFilter" => UpdateDialogFilter(r: UpdateDialogFilter) => Bool(app.update_dialog_filter(c, r).await?),
    "messages.updateDialogFiltersOrder" => UpdateDialogFiltersOrder(r: UpdateDialogFiltersOrder) => Bool(app.update_dialog_filters_order(c, r).await?),
    "messages.toggleDialogFilterTags" => ToggleDialogFilterTags(r: ToggleDialogFilterTags) => Bool(app.toggle_dialog_filter_tags(c, r).await?),
    "contacts.importContacts" => ImportContacts(r: ImportContacts) => app.import_contacts(c, r).await?,
    "contacts.addContact" => AddContact(r: AddContact) => app.add_contact(c, r).await?,
    "contacts.deleteContacts" => DeleteContacts(r: DeleteContacts) => app.delete_contacts(c, r).await?,
    "contacts.getContacts" => GetContacts(r: GetContacts) => app.get_contacts(c, r).await?,
    "contacts.resetSaved" => ResetSaved(_r: NoParams) => Bool(app.reset_saved_contacts(c).await?),
    "messages.getPeerSettings" => GetPeerSettings(r: GetPeerSettings) => app.get_peer_settings(c, r).await?,
    "messages.hidePeerSettingsBar" => HidePeerSettingsBar(r: HidePeerSettingsBar) => Bool(app.hide_peer_settings_bar(c, r).await?),
    "account.updateNotifySettings" => UpdateNotifySettings(r: UpdateNotifySettings) => Bool(app.update_notify_settings(c, r).await?),
    "account.getNotifySettings" => GetNotifySettings(r: GetNotifySettings) => app.get_notify_settings(c, r).await?,
    "account.getPassword" => GetPassword(_r: NoParams) => app.get_password(c.user_id).await?,
    "account.updatePasswordSettings" => UpdatePasswordSettings(r: UpdatePasswordSettings) => Bool(app.update_password_settings(c.user_id, r).await?),
    "account.getAuthorizations" => GetAuthorizations(_r: NoParams) => app.get_authorizations(c).await?,
    "account.resetAuthorization" => ResetAuthorization(r: ResetAuthorization) => {
        app.reset_authorization(c, r.hash).await?;
        Bool(true)
    },
    "messages.sendMedia" => SendMedia(r: SendMedia) => app.send_media(c, r).await?,
    "messages.sendMultiMedia" => SendMultiMedia(r: SendMultiMedia) => app.send_multi_media(c, r).await?,
    "messages.uploadMedia" => UploadMedia(r: UploadMedia) => app.upload_media(c, r).await?,
    "upload.getFile" => GetFile(r: GetFile) => app.get_file(c, r).await?,
    "photos.uploadProfilePhoto" => UploadProfilePhoto(r: UploadProfilePhoto) => app.upload_profile_photo(c, r).await?,
    "photos.updateProfilePhoto" => UpdateProfilePhoto(r: UpdateProfilePhoto) => app.update_profile_photo(c, r).await?,
    "photos.getUserPhotos" => GetUserPhotos(r: GetUserPhotos) => app.get_user_photos(c, r).await?,
    "photos.deletePhotos" => DeletePhotos(r: DeletePhotos) => app.delete_photos(c, r).await?,
    "upload.saveFilePart" => SaveFilePart(r: SaveFilePart) => {
        app.save_file_part(c, r.into()).await?;
        Bool(true)
    },
    "upload.saveBigFilePart" => SaveBigFilePart(r: SaveBigFilePart) => {
        app.save_file_part(c, r.into()).await?;
        Bool(true)
    },
}

/// Serves one call of `caller`: parses `params` into the method's request, waits for one of the
/// account's call permits (held until the answer is rendered: one account cannot hold every
/// database connection), runs the handler and renders its answer.
pub async fn call<R: Render>(
    app: &App,
    caller: &Caller,
    method: &str,
    params: impl Params,
    render: R,
) -> Result<R::Out, Failure> {
    let request = Request::parse(method, params)?;
    let _permit = app.account_requests().acquire(caller.user_id).await?;
    request.run(app, caller, render).await
}

/// Whether `method` is in the table.
pub fn serves(method: &str) -> bool {
    METHODS.contains(&method)
}

#[cfg(test)]
mod tests {
    use application::tl::{PeerNotifySettings, PeerSettings, User, UserFull, UsersUserFull};
    use mtproto::tl::{decode_object, encode_result, Reader, Schema, Writer, BOOL_TRUE};
    use serde_json::{json, Value};

    use super::*;

    fn refused(parsed: Result<Request, Failure>) -> RpcError {
        match parsed {
            Ok(request) => panic!("{} parsed", request.method()),
            Err(f) => f.0,
        }
    }

    #[test]
    fn the_table_names_each_method_once_and_parses_by_name() {
        let mut names: Vec<&str> = METHODS.to_vec();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), METHODS.len(), "a name twice in the table");
        for method in METHODS {
            assert!(serves(method));
            // `{}` may lack required parameters, but never names an unknown method.
            match Request::parse(method, json!({})) {
                Ok(request) => assert_eq!(request.method(), *method),
                Err(f) => assert_eq!(f.0.error_message, "INPUT_REQUEST_INVALID", "{method}"),
            }
        }
    }

    #[test]
    fn an_unknown_method_is_method_invalid_on_both_fronts() {
        for name in [
            "messages.sendMessag",
            "",
            "upload.getCdnFile",
            "users.getFullUser ",
        ] {
            assert!(!serves(name));
            let http = refused(Request::parse(name, JsonBody(b"{}")));
            let mtproto = refused(Request::parse(name, json!({})));
            assert_eq!(
                (http.error_code, &*http.error_message),
                (400, "METHOD_INVALID")
            );
            assert_eq!(
                (mtproto.error_code, &mtproto.error_message),
                (http.error_code, &http.error_message)
            );
        }
    }

    #[test]
    fn a_parameter_that_does_not_parse_is_the_same_error_on_both_fronts() {
        let cases = [
            (
                "messages.sendMessage",
                json!({"peer": {"_": "inputPeerSelf"}, "message": 5}),
            ),
            ("messages.getHistory", json!({"peer": "me", "limit": 10})),
            ("users.getFullUser", json!({})),
            ("users.getFullUser", json!({"id": {"_": "inputUserNobody"}})),
            ("account.resetAuthorization", json!({"hash": "x"})),
            ("updates.getDifference", json!({"pts": -1.5})),
        ];
        for (method, params) in cases {
            let bytes = serde_json::to_vec(&params).unwrap();
            let http = refused(Request::parse(method, JsonBody(&bytes)));
            let mtproto = refused(Request::parse(method, params.clone()));
            assert_eq!(
                (http.error_code, &*http.error_message),
                (400, "INPUT_REQUEST_INVALID")
            );
            assert_eq!(
                (mtproto.error_code, &mtproto.error_message),
                (http.error_code, &http.error_message),
                "{method} {params}"
            );
            assert!(mtproto.detail.is_some_and(|d| !d.is_empty()));
        }
        // The JSON API's own refusals of what MTProto cannot send.
        for body in [&b"[1]"[..], b" [ ]", b"{", b"5"] {
            let e = refused(Request::parse("updates.getState", JsonBody(body)));
            assert_eq!(e.error_message, "INPUT_REQUEST_INVALID");
        }
        assert_eq!(
            Request::parse("updates.getState", JsonBody(b"  \n"))
                .map(|r| r.method())
                .ok(),
            Some("updates.getState")
        );
    }

    #[test]
    fn an_answer_renders_the_same_for_both_fronts_and_encodes_as_tl() {
        let answer = UsersUserFull {
            full_user: UserFull {
                id: 7,
                settings: PeerSettings {
                    report_spam: false,
                    add_contact: true,
                    block_contact: true,
                },
                notify_settings: PeerNotifySettings {
                    mute_until: Some(i32::MAX),
                    ..Default::default()
                },
                common_chats_count: 0,
                profile_photo: None,
            },
            chats: Vec::new(),
            users: vec![User {
                is_self: false,
                contact: false,
                mutual_contact: false,
                deleted: false,
                id: 7,
                access_hash: -3,
                first_name: "Bob".into(),
                last_name: String::new(),
                phone: None,
                photo: None,
            }],
        };
        let tl = |function| TlBytes {
            schema: Schema::api(),
            function,
        };
        let bytes = JsonBytes.render(&answer).unwrap();
        let object: Value = serde_json::from_slice(&bytes).unwrap();
        let typed = tl("users.getFullUser").render(&answer).unwrap();
        let mut w = Writer::new();
        encode_result(Schema::api(), "users.getFullUser", &object, &mut w).unwrap();
        assert_eq!(typed, w.buf, "both fronts' forms say the same");
        let back = decode_object(Schema::api(), &mut Reader::new(&typed)).unwrap();
        assert_eq!(back["_"], "users.userFull");
        assert_eq!(back["full_user"]["notify_settings"]["mute_until"], i32::MAX);
        assert_eq!(back["users"][0]["access_hash"], -3);

        let yes = tl("contacts.block").render(&Bool(true)).unwrap();
        assert_eq!(yes, BOOL_TRUE.to_le_bytes());
        assert_eq!(
            JsonBytes.render(&Bool(true)).unwrap(),
            br#"{"_":"boolTrue"}"#
        );
    }
}
