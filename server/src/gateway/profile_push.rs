//! A profile photo change reaches the devices of other accounts that show the owner: the peers
//! of the owner's dialogs and the accounts that have the owner as a contact (docs/media.md,
//! "Profile photos"). Each online here gets `updateUser {user_id: owner}` with the owner's `user`
//! as it sees it, outside its own pts sequence (the change is not an event of its log, so a
//! device that was offline learns the photo with the next answer that shows the owner).

use std::sync::Arc;

use application::fanout::{Frame, LogRecord};
use application::ports::UserPhoto;
use application::tl::{Update, Updates, User};
use domain::events::UserEvent;
use domain::{AuthKeyId, UserId};

use super::fanout::Fanout;

/// The most accounts one change is pushed to: past it the rest learn the photo with their next
/// read (a change by an account with that many chats or admirers is rare, and each instance runs
/// this for every change).
pub const MAX_PROFILE_PUSH_WATCHERS: i64 = 10_000;

impl Fanout {
    pub(super) async fn push_profile_photo(&self, owner: UserId, record: &LogRecord) {
        let (stored, committed_at) = match (record.stored_event(), record.committed_at()) {
            (Ok(stored), Ok(at)) => (stored, at),
            // Counted where the owner's own frame decodes it.
            _ => return,
        };
        let UserEvent::ProfilePhotoChanged(change) = &stored.event else {
            return;
        };
        let watchers = match self
            .users
            .store()
            .profile_watchers(owner, MAX_PROFILE_PUSH_WATCHERS)
            .await
        {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!(error = %e, "loading who sees a profile photo change");
                return;
            }
        };
        let online: Vec<UserId> = watchers
            .into_iter()
            .filter(|w| self.hub.has_devices(*w))
            .collect();
        if online.is_empty() {
            return;
        }
        let mut record_of_owner = match self.users.get(&[owner]).await {
            Ok(mut found) if !found.is_empty() => found.remove(0),
            Ok(_) => return,
            Err(e) => {
                tracing::warn!(error = %e, "loading the user of a profile photo change");
                return;
            }
        };
        // The record's photo, not a read that may predate the commit.
        record_of_owner.photo = change.photo.as_ref().map(UserPhoto::of);
        for viewer in online {
            let link = match self.contacts.get(viewer, &[owner]).await {
                Ok(mut links) if !links.is_empty() => links.remove(0),
                _ => Default::default(),
            };
            let user = User::for_viewer(viewer, &record_of_owner, &self.keys)
                .with_contact(link.contact.as_ref(), link.they_have_owner);
            let updates = Updates::Updates {
                updates: vec![Update::User {
                    user_id: owner.get(),
                }],
                users: vec![user],
                chats: Vec::new(),
                date: stored.date,
                seq: 0,
            };
            // TL objects are plain data; serializing them cannot fail.
            let json = serde_json::to_string(&updates).unwrap_or_default();
            let frame = Frame::new(0, Arc::from(json), committed_at.timestamp_micros(), false);
            // No device of the viewer caused the change.
            self.hub
                .deliver_unsequenced(viewer, AuthKeyId::default(), &frame);
        }
    }
}
