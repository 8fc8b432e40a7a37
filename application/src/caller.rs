use domain::{AuthKeyId, SessionId, UserId};

/// Who is calling: the account and the device (authorization) and session the call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Caller {
    pub user_id: UserId,
    pub auth_key_id: AuthKeyId,
    pub session_id: SessionId,
}
