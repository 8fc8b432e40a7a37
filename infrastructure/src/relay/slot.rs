//! Checks and setup before streaming: the server can decode logically, the publication exists,
//! and the replication slot exists (created here on first start) and belongs to this database.

use sqlx::PgConnection;

use super::connection::PUBLICATION;
use super::error::RelayError;

/// A slot name Postgres accepts; it is also spliced into `START_REPLICATION`, so nothing else may
/// pass.
pub fn valid_slot_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

pub async fn prepare(conn: &mut PgConnection, slot: &str) -> Result<(), RelayError> {
    let wal_level: String = sqlx::query_scalar("SELECT current_setting('wal_level')")
        .fetch_one(&mut *conn)
        .await?;
    if wal_level != "logical" {
        return Err(RelayError::Fatal(format!(
            "Postgres runs with wal_level={wal_level}, but the relay streams the log by logical replication and needs \
             wal_level=logical (set it in postgresql.conf and restart Postgres); until then there are no live pushes \
             (RPCs and updates.getDifference work as usual)"
        )));
    }
    let published: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)")
            .bind(PUBLICATION)
            .fetch_one(&mut *conn)
            .await?;
    if !published {
        return Err(RelayError::Fatal(format!(
            "publication {PUBLICATION} is missing: run `ptslog migrate`"
        )));
    }
    let existing: Option<(Option<String>, Option<String>, String)> = sqlx::query_as(
        "SELECT d.datname::text, s.plugin::text, s.slot_type FROM pg_replication_slots s \
         LEFT JOIN pg_database d ON d.oid = s.datoid WHERE s.slot_name = $1",
    )
    .bind(slot)
    .fetch_optional(&mut *conn)
    .await?;
    let here: String = sqlx::query_scalar("SELECT current_database()::text")
        .fetch_one(&mut *conn)
        .await?;
    match existing {
        None => {
            // Postgres builds the slot's starting snapshot by waiting for every transaction in
            // progress on the server (any database) to end; a long one delays the first start.
            tracing::info!(
                slot,
                "creating the replication slot (waits for transactions in progress to end)"
            );
            let created = sqlx::query("SELECT pg_create_logical_replication_slot($1, 'pgoutput')")
                .bind(slot)
                .execute(&mut *conn)
                .await;
            match created {
                Ok(_) => {
                    tracing::info!(slot, "created the replication slot");
                    Ok(())
                }
                // Created by someone else meanwhile: checked again on the next attempt.
                Err(e)
                    if e.as_database_error()
                        .and_then(|d| d.code())
                        .is_some_and(|c| c == "42710") =>
                {
                    Err(RelayError::Transient(format!(
                        "replication slot {slot} appeared while creating it"
                    )))
                }
                Err(e) => Err(e.into()),
            }
        }
        Some((database, plugin, kind)) => {
            if kind != "logical" || plugin.as_deref() != Some("pgoutput") {
                return Err(RelayError::Fatal(format!(
                    "replication slot {slot} exists but is a {kind} slot with plugin {plugin:?}, not a pgoutput logical slot; \
                     drop it or set PTSLOG_RELAY_SLOT"
                )));
            }
            if database.as_deref() != Some(here.as_str()) {
                return Err(RelayError::Fatal(format!(
                    "replication slot {slot} belongs to database {database:?}, not {here}; slot names are per Postgres \
                     server, so set PTSLOG_RELAY_SLOT to one unique to this database"
                )));
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_names_are_what_postgres_allows() {
        assert!(valid_slot_name("ptslog_relay"));
        assert!(valid_slot_name("r_0123456789abcdef"));
        assert!(!valid_slot_name(""));
        assert!(!valid_slot_name("Upper"));
        assert!(!valid_slot_name("x; DROP"));
        assert!(!valid_slot_name(&"a".repeat(64)));
    }
}
