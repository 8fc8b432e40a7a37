//! TL-shaped objects: what handlers answer and what requests name. Serialized with serde, each object
//! carries its TL constructor name in `"_"`, fields by their TL names (the JSON API's contract).

mod authorization;
mod bool;
mod bytes;
mod dialog;
mod difference;
mod from_event;
mod input;
mod input_media;
mod media;
mod message;
mod misc;
mod organization;
mod peer;
mod photos;
mod rpc_error;
mod update;
mod user;
mod user_full;

pub use authorization::{AccountAuthorizations, AuthorizationItem};
pub use bool::Bool;
pub use bytes::Bytes;
pub use dialog::{Dialog, Dialogs, NotifyPeer, PeerDialogs, PeerNotifySettings};
pub use difference::{Difference, State};
pub use from_event::{update_for_event, users_of_event};
pub use input::{long, longs, opt_long, InputMentionName, InputPeer, InputReplyTo, InputUser};
pub use input_media::{InputDocument, InputMedia, InputPhoto, InputSingleMedia, MediaRequest};
pub use media::{tl_attributes, FileRefs, TlDocument, TlMessageMedia, TlPhoto, TlPhotoSize};
pub use message::{
    users_of_message, Message, MessageEmpty, MessageFwdHeader, MessageItem, MessageReplyHeader,
    Messages,
};
pub use misc::{
    AffectedHistory, AffectedMessages, Blocked, OutboxReadDate, PeerBlocked, ResolvedPeer,
};
pub use organization::{
    Contact, Contacts, DialogFilter, DialogFilters, DialogPeer, FolderPeer, ImportedContact,
    ImportedContacts, MessagesPeerSettings, OwnInputPeer, PeerSettings, TextWithEntities,
};
pub use peer::Peer;
pub use photos::{AnyPhoto, PhotoEmpty, PhotosPage, PhotosPhoto};
pub use rpc_error::{tl_name, RpcError};
pub use update::{Update, Updates};
pub use user::{User, UserProfilePhoto};
pub use user_full::{UserFull, UsersUserFull};
