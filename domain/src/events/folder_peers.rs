use serde::{Deserialize, Serialize};

use super::EventKind;
use crate::ids::UserId;

/// One dialog moved to a folder (0 main list, 1 archive).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FolderPeer {
    pub peer_id: UserId,
    pub folder_id: i16,
}

/// Dialogs moved between the main list and the archive (`folders.editPeerFolders`). Only dialogs
/// whose folder changed are listed; a moved dialog loses its pin. TL: `updateFolderPeers`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct FolderPeers {
    pub folder_peers: Vec<FolderPeer>,
}

impl EventKind for FolderPeers {
    const KIND: &'static str = "folder_peers";
    const VERSION: i16 = 1;
}
