//! The shadow copies an online rebuild fills, and the swap that puts them in place of the live
//! tables.
//!
//! A shadow table is a copy of the live table's definition, built from the catalog: columns with
//! defaults, the same partitioning and partitions, every constraint and index under its own name
//! (names are per schema, so the shadow's can equal the live ones, and after the swap the tables
//! carry exactly the names the migrations gave them). `LIKE … INCLUDING ALL` alone would do for a
//! plain table but copies neither partitioning nor partitions.

use sqlx::{Connection, PgConnection, Row};

use crate::{Projection, ProjectionError};

/// Where the shadow copies are built.
pub(crate) const SHADOW_SCHEMA: &str = "ptslog_rebuild";
/// Where the replaced live tables go for the moment between the swap and their drop.
pub(crate) const RETIRED_SCHEMA: &str = "ptslog_retired";

/// The per-account watermark of the replay (last pts applied to the shadow).
pub(crate) fn watermarks_table() -> String {
    format!("{SHADOW_SCHEMA}.replay_watermarks")
}

/// The schema the connection's unqualified table names resolve to (where the live tables are).
pub(crate) async fn live_schema(conn: &mut PgConnection) -> Result<String, ProjectionError> {
    let schema: Option<String> = sqlx::query_scalar("SELECT current_schema()")
        .fetch_one(&mut *conn)
        .await?;
    schema.ok_or_else(|| ProjectionError::Corrupt("the connection has no current schema".into()))
}

async fn quoted(
    conn: &mut PgConnection,
    schema: &str,
    table: &str,
) -> Result<String, ProjectionError> {
    Ok(
        sqlx::query_scalar("SELECT quote_ident($1) || '.' || quote_ident($2)")
            .bind(schema)
            .bind(table)
            .fetch_one(&mut *conn)
            .await?,
    )
}

/// Drops any shadow and retired schema left by an earlier rebuild (the caller holds the rebuild
/// lock, so no other rebuild is using them), then creates the shadow schema with its watermark
/// table and an empty copy of each of `projections`.
pub(crate) async fn create(
    conn: &mut PgConnection,
    live: &str,
    projections: &[Projection],
) -> Result<(), ProjectionError> {
    drop_schemas(conn).await?;
    sqlx::query(&format!("CREATE SCHEMA {SHADOW_SCHEMA}"))
        .execute(&mut *conn)
        .await?;
    sqlx::query(&format!(
        "CREATE TABLE {} (user_id bigint PRIMARY KEY, pts integer NOT NULL)",
        watermarks_table()
    ))
    .execute(&mut *conn)
    .await?;
    let mut tx = conn.begin().await?;
    // With only pg_catalog on the path, the catalog functions qualify every name they print.
    sqlx::query("SET LOCAL search_path = pg_catalog")
        .execute(&mut *tx)
        .await?;
    for p in projections {
        for statement in copy_statements(&mut tx, live, p.name()).await? {
            sqlx::query(&statement).execute(&mut *tx).await?;
        }
    }
    tx.commit().await?;
    Ok(())
}

/// The DDL that creates an empty copy of `live.table` in the shadow schema.
async fn copy_statements(
    conn: &mut PgConnection,
    live: &str,
    table: &str,
) -> Result<Vec<String>, ProjectionError> {
    let source = quoted(conn, live, table).await?;
    let target = quoted(conn, SHADOW_SCHEMA, table).await?;
    let partition_key: Option<String> = sqlx::query_scalar(
        "SELECT pg_get_partkeydef(c.oid) FROM pg_class c WHERE c.oid = to_regclass($1)",
    )
    .bind(&source)
    .fetch_optional(&mut *conn)
    .await?
    .ok_or_else(|| ProjectionError::Corrupt(format!("no table {source}")))?;
    let mut out = vec![format!(
        "CREATE TABLE {target} (LIKE {source} INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING IDENTITY \
         INCLUDING STORAGE){}",
        partition_key
            .map(|k| format!(" PARTITION BY {k}"))
            .unwrap_or_default()
    )];
    let partitions = sqlx::query(
        "SELECT quote_ident(c.relname) AS name, pg_get_expr(c.relpartbound, c.oid) AS bound \
         FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE i.inhparent = to_regclass($1) ORDER BY c.relname",
    )
    .bind(&source)
    .fetch_all(&mut *conn)
    .await?;
    for row in partitions {
        let name: String = row.try_get("name")?;
        let bound: String = row.try_get("bound")?;
        out.push(format!(
            "CREATE TABLE {SHADOW_SCHEMA}.{name} PARTITION OF {target} {bound}"
        ));
    }
    let constraints = sqlx::query(
        "SELECT quote_ident(conname) AS name, pg_get_constraintdef(oid) AS def FROM pg_constraint \
         WHERE conrelid = to_regclass($1) AND contype IN ('p', 'u', 'x', 'c', 'f') AND conislocal \
         ORDER BY contype = 'p' DESC, conname",
    )
    .bind(&source)
    .fetch_all(&mut *conn)
    .await?;
    for row in constraints {
        let name: String = row.try_get("name")?;
        let def: String = row.try_get("def")?;
        out.push(format!("ALTER TABLE {target} ADD CONSTRAINT {name} {def}"));
    }
    let indexes: Vec<String> = sqlx::query_scalar(
        "SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i \
         WHERE i.indrelid = to_regclass($1) AND NOT EXISTS \
           (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid) \
         ORDER BY i.indexrelid",
    )
    .bind(&source)
    .fetch_all(&mut *conn)
    .await?;
    for def in indexes {
        // "CREATE INDEX name ON [ONLY] live.table USING …": the index of a partitioned table is
        // printed ON ONLY (its partitions' indexes are separate); the copy must recurse instead.
        let statement = [format!(" ON ONLY {source} "), format!(" ON {source} ")]
            .iter()
            .find(|on| def.contains(on.as_str()))
            .map(|on| def.replacen(on.as_str(), &format!(" ON {target} "), 1))
            .ok_or_else(|| {
                ProjectionError::Corrupt(format!("cannot copy the index definition {def:?}"))
            })?;
        out.push(statement);
    }
    Ok(out)
}

/// The partitions of `schema.table` (empty for a plain table).
async fn partitions(
    conn: &mut PgConnection,
    schema: &str,
    table: &str,
) -> Result<Vec<String>, ProjectionError> {
    let parent = quoted(conn, schema, table).await?;
    Ok(sqlx::query_scalar(
        "SELECT quote_ident(c.relname) FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE i.inhparent = to_regclass($1) ORDER BY c.relname",
    )
    .bind(parent)
    .fetch_all(&mut *conn)
    .await?)
}

/// The statements of the swap, as one script for one round trip: take the live tables (readers
/// wait from here to the commit), move each (with its partitions) to the retired schema, and move
/// each shadow table (with its partitions) into the live schema. Renames only: constant time
/// whatever the size. Prepared before the swap's transaction (which runs it) so that the catalog
/// lookups are not part of the time writers wait; creates the (empty) retired schema.
pub(crate) async fn swap_script(
    conn: &mut PgConnection,
    live: &str,
    projections: &[Projection],
) -> Result<String, ProjectionError> {
    sqlx::query(&format!("CREATE SCHEMA {RETIRED_SCHEMA}"))
        .execute(&mut *conn)
        .await?;
    let live_q: String = sqlx::query_scalar("SELECT quote_ident($1)")
        .bind(live)
        .fetch_one(&mut *conn)
        .await?;
    let mut tables = Vec::new();
    for p in projections {
        tables.push(format!("{live_q}.{}", p.name()));
    }
    let mut script = vec![format!(
        "LOCK TABLE {} IN ACCESS EXCLUSIVE MODE",
        tables.join(", ")
    )];
    for (from, from_name, to) in [
        (live_q.as_str(), live, RETIRED_SCHEMA),
        (SHADOW_SCHEMA, SHADOW_SCHEMA, live_q.as_str()),
    ] {
        for p in projections {
            for part in partitions(conn, from_name, p.name()).await? {
                script.push(format!("ALTER TABLE {from}.{part} SET SCHEMA {to}"));
            }
            script.push(format!("ALTER TABLE {from}.{} SET SCHEMA {to}", p.name()));
        }
    }
    Ok(script.join(";\n"))
}

/// Drops the shadow and retired schemas with whatever they hold.
pub(crate) async fn drop_schemas(conn: &mut PgConnection) -> Result<(), ProjectionError> {
    for schema in [SHADOW_SCHEMA, RETIRED_SCHEMA] {
        sqlx::query(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}
