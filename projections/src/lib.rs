//! Projectors: one per read model. Each takes one event of one owner's log (and its pts) and changes
//! its read model accordingly; nothing else writes the read models. The same code runs inline, inside
//! the command's transaction that appends the event, and when the read models are rebuilt from the log.
//!
//! Order matters: `dialogs` reads `message_boxes` (to recompute top message and unread count after a
//! deletion), so `message_boxes` must have applied the same event first. [`Projection::ALL`] is
//! that order.

pub mod contact_blocks;
pub mod contacts;
pub mod dialog_filter_settings;
pub mod dialog_filters;
pub mod dialogs;
pub mod error;
pub mod inline;
pub mod message_boxes;
pub mod notify_settings;
pub mod online;
pub mod peer_settings;
pub mod profile_photos;
pub mod rebuild;
pub mod repair;
pub mod reverse_contacts;
mod shadow;
pub mod status;
pub mod verify;

use domain::events::UserEvent;
use domain::message::OwnerMessage;
use domain::{Pts, UserId};
use sqlx::PgConnection;

pub use error::ProjectionError;
pub use online::{rebuild_online, OnlineRebuildReport, Progress, RebuildControl};
pub use rebuild::{rebuild_all, RebuildReport};
pub use repair::{repair_users, RepairReport};
pub use status::{ProjectionStatus, RebuildState};
pub use verify::{verify, verify_selected, VerifyReport};

/// The read models. Each names its table and the version of its projector's logic: bump the version
/// when the projector changes what it writes, so a rebuild is known to be due.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Projection {
    MessageBoxes,
    Dialogs,
    ContactBlocks,
    DialogFilters,
    DialogFilterSettings,
    Contacts,
    ReverseContacts,
    PeerSettings,
    NotifySettings,
    ProfilePhotos,
}

impl Projection {
    /// Every projection, in dependency order (a projection may read only those before it).
    pub const ALL: [Projection; 10] = [
        Projection::MessageBoxes,
        Projection::Dialogs,
        Projection::ContactBlocks,
        Projection::DialogFilters,
        Projection::DialogFilterSettings,
        Projection::Contacts,
        Projection::ReverseContacts,
        Projection::PeerSettings,
        Projection::NotifySettings,
        Projection::ProfilePhotos,
    ];

    /// The projection's name, which is also its table's name.
    pub fn name(self) -> &'static str {
        match self {
            Projection::MessageBoxes => message_boxes::NAME,
            Projection::Dialogs => dialogs::NAME,
            Projection::ContactBlocks => contact_blocks::NAME,
            Projection::DialogFilters => dialog_filters::NAME,
            Projection::DialogFilterSettings => dialog_filter_settings::NAME,
            Projection::Contacts => contacts::NAME,
            Projection::ReverseContacts => reverse_contacts::NAME,
            Projection::PeerSettings => peer_settings::NAME,
            Projection::NotifySettings => notify_settings::NAME,
            Projection::ProfilePhotos => profile_photos::NAME,
        }
    }

    pub fn version(self) -> i32 {
        match self {
            Projection::MessageBoxes => message_boxes::VERSION,
            Projection::Dialogs => dialogs::VERSION,
            Projection::ContactBlocks => contact_blocks::VERSION,
            Projection::DialogFilters => dialog_filters::VERSION,
            Projection::DialogFilterSettings => dialog_filter_settings::VERSION,
            Projection::Contacts => contacts::VERSION,
            Projection::ReverseContacts => reverse_contacts::VERSION,
            Projection::PeerSettings => peer_settings::VERSION,
            Projection::NotifySettings => notify_settings::VERSION,
            Projection::ProfilePhotos => profile_photos::VERSION,
        }
    }

    /// The projection named `name` (its table's name).
    pub fn from_name(name: &str) -> Option<Projection> {
        Projection::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The projections whose tables this projector reads while applying an event. A replay of this
    /// projection must replay them too, into the same scratch tables, or it would read their
    /// present state instead of their state at the event.
    pub fn depends_on(self) -> &'static [Projection] {
        match self {
            Projection::Dialogs => &[Projection::MessageBoxes],
            _ => &[],
        }
    }

    /// The column naming the owner of each row. Every projector reads and writes only rows of the
    /// event's owner, which is what makes a per-user repair or verify exact.
    pub fn owner_column(self) -> &'static str {
        self.key_columns()[0]
    }

    /// The primary key columns of the projection's table (used to compare live and replayed rows).
    pub fn key_columns(self) -> [&'static str; 2] {
        match self {
            Projection::MessageBoxes => ["owner_user_id", "box_id"],
            Projection::Dialogs => ["user_id", "peer_user_id"],
            Projection::ContactBlocks => ["owner_user_id", "blocked_user_id"],
            Projection::DialogFilters => ["user_id", "filter_id"],
            // One row per owner: the key is the owner alone.
            Projection::DialogFilterSettings => ["user_id", "user_id"],
            Projection::Contacts => ["owner_user_id", "contact_user_id"],
            Projection::ReverseContacts => ["owner_user_id", "contact_user_id"],
            Projection::PeerSettings => ["owner_user_id", "peer_user_id"],
            Projection::NotifySettings => ["owner_user_id", "peer_user_id"],
            Projection::ProfilePhotos => ["owner_user_id", "photo_id"],
        }
    }

    /// Applies one event to this projection only.
    pub async fn apply(
        self,
        conn: &mut PgConnection,
        owner: UserId,
        pts: Pts,
        event: &UserEvent,
    ) -> Result<(), ProjectionError> {
        match self {
            Projection::MessageBoxes => message_boxes::apply(conn, owner, pts, event).await,
            Projection::Dialogs => dialogs::apply(conn, owner, pts, event).await,
            Projection::ContactBlocks => contact_blocks::apply(conn, owner, pts, event).await,
            Projection::DialogFilters => dialog_filters::apply(conn, owner, pts, event).await,
            Projection::DialogFilterSettings => {
                dialog_filter_settings::apply(conn, owner, pts, event).await
            }
            Projection::Contacts => contacts::apply(conn, owner, pts, event).await,
            Projection::ReverseContacts => reverse_contacts::apply(conn, owner, pts, event).await,
            Projection::PeerSettings => peer_settings::apply(conn, owner, pts, event).await,
            Projection::NotifySettings => notify_settings::apply(conn, owner, pts, event).await,
            Projection::ProfilePhotos => profile_photos::apply(conn, owner, pts, event).await,
        }
    }
}

/// Applies one event of `owner`'s log, at `pts`, to every read model in dependency order.
pub async fn apply(
    conn: &mut PgConnection,
    owner: UserId,
    pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    for projection in Projection::ALL {
        projection.apply(conn, owner, pts, event).await?;
    }
    Ok(())
}

/// One new message of `owner`'s log at `pts`: what the projectors of new messages take, many at a
/// time (`message_boxes::insert`, `dialogs::new_messages`).
#[derive(Debug, Clone, Copy)]
pub struct NewMessageAt<'a> {
    pub owner: UserId,
    pub pts: Pts,
    pub message: &'a OwnerMessage,
}

/// The most new messages one statement of a projector writes: a rebuild page's run is cut into
/// statements of at most this many rows, so a statement's parameters stay small.
pub const MAX_NEW_MESSAGES_PER_STATEMENT: usize = 1000;

/// Applies a run of new messages (of any owners, in log order) to each of `projections` (in
/// dependency order), with one statement per table instead of one per message: the same rows as
/// applying each `new_message` event alone. Only `message_boxes` and `dialogs` react to new
/// messages, and neither reads the other's rows for them, so the run goes table by table.
pub async fn apply_new_messages(
    conn: &mut PgConnection,
    projections: &[Projection],
    run: &[NewMessageAt<'_>],
) -> Result<(), ProjectionError> {
    for part in run.chunks(MAX_NEW_MESSAGES_PER_STATEMENT) {
        for projection in projections {
            match projection {
                Projection::MessageBoxes => message_boxes::insert(conn, part).await?,
                Projection::Dialogs => dialogs::new_messages(conn, part).await?,
                // No match arm for all: a projection added later must say here what a new
                // message does to it.
                Projection::ContactBlocks
                | Projection::DialogFilters
                | Projection::DialogFilterSettings
                | Projection::Contacts
                | Projection::ReverseContacts
                | Projection::PeerSettings
                | Projection::NotifySettings
                | Projection::ProfilePhotos => {}
            }
        }
    }
    Ok(())
}

/// Applies events of the log, in order, to each of `projections` (in dependency order): each
/// run of consecutive new messages with [`apply_new_messages`], every other event alone.
pub async fn apply_events(
    conn: &mut PgConnection,
    projections: &[Projection],
    events: &[(UserId, Pts, UserEvent)],
) -> Result<(), ProjectionError> {
    let mut run: Vec<NewMessageAt<'_>> = Vec::new();
    for (owner, pts, event) in events {
        if let UserEvent::NewMessage(e) = event {
            run.push(NewMessageAt {
                owner: *owner,
                pts: *pts,
                message: &e.message,
            });
            continue;
        }
        apply_new_messages(conn, projections, &run).await?;
        run.clear();
        apply_to(conn, projections, *owner, *pts, event).await?;
    }
    apply_new_messages(conn, projections, &run).await
}

/// `selected` and everything it depends on, in dependency order, without repeats.
pub fn with_dependencies(selected: &[Projection]) -> Vec<Projection> {
    let mut needed: Vec<Projection> = Vec::new();
    let mut stack: Vec<Projection> = selected.to_vec();
    while let Some(p) = stack.pop() {
        if !needed.contains(&p) {
            needed.push(p);
            stack.extend_from_slice(p.depends_on());
        }
    }
    Projection::ALL
        .into_iter()
        .filter(|p| needed.contains(p))
        .collect()
}

/// Applies one event to each of `projections` (which must be in dependency order).
pub async fn apply_to(
    conn: &mut PgConnection,
    projections: &[Projection],
    owner: UserId,
    pts: Pts,
    event: &UserEvent,
) -> Result<(), ProjectionError> {
    for projection in projections {
        projection.apply(conn, owner, pts, event).await?;
    }
    Ok(())
}

/// The projection tables as one comma-separated list, in dependency order (for LOCK and TRUNCATE).
pub(crate) fn table_list() -> String {
    Projection::ALL
        .iter()
        .map(|p| p.name())
        .collect::<Vec<_>>()
        .join(", ")
}

pub(crate) fn box_ids(ids: &[domain::BoxId]) -> Vec<i32> {
    ids.iter().map(|id| id.get()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dialogs_come_after_the_boxes_they_read() {
        let position = |p| Projection::ALL.iter().position(|q| *q == p);
        assert!(position(Projection::MessageBoxes) < position(Projection::Dialogs));
        assert_eq!(
            table_list(),
            "message_boxes, dialogs, contact_blocks, dialog_filters, dialog_filter_settings, contacts, reverse_contacts, peer_settings, notify_settings, profile_photos"
        );
    }

    #[test]
    fn dependencies_are_pulled_in_and_ordered() {
        assert_eq!(
            with_dependencies(&[Projection::Dialogs]),
            [Projection::MessageBoxes, Projection::Dialogs]
        );
        assert_eq!(
            with_dependencies(&[Projection::PeerSettings, Projection::MessageBoxes]),
            [Projection::MessageBoxes, Projection::PeerSettings]
        );
        for p in Projection::ALL {
            for d in p.depends_on() {
                let position = |x| Projection::ALL.iter().position(|q| *q == x);
                assert!(
                    position(*d) < position(p),
                    "{p:?} reads {d:?}, which must come first"
                );
            }
            assert_eq!(Projection::from_name(p.name()), Some(p));
        }
    }
}
