//! Statements addressed to one account's partition.
//!
//! Every per-account table is hash-partitioned by its account column into [`USER_PARTITIONS`]
//! partitions named `<table>_p<remainder>` (migrations 0001, 0003, 0006, 0023). A hot read names
//! one account, so it touches one partition; but a statement written against the parent makes the
//! serving pools' generic plan name all sixteen, and each execution then locks every partition and
//! each of its indexes (about a hundred locks for a getDifference, past the 16 fast-path slots, so
//! through the shared lock manager), and every `ANALYZE` of any partition throws the plan away on
//! every connection. The same statement addressed to the account's own partition costs half the
//! database time (docs/performance.md, "Statements addressed to the partition").
//!
//! The partition of an account is computed here as Postgres computes it, so no round trip is
//! spent on it. Before a store addresses anything it checks the catalog ([`verify`]): the tables
//! partitioned as the migrations made them, and this computation agreeing with Postgres's own
//! `satisfies_hash_partition` for sample accounts. If anything differs (an operator re-partitioned
//! a table, a future Postgres changed its hash), the store keeps using the parents: slower, never
//! wrong.

use std::sync::LazyLock;

use domain::UserId;
use sqlx::PgConnection;

/// How many hash partitions each per-account table has (`MODULUS` in the migrations).
pub const USER_PARTITIONS: u32 = 16;

/// The tables partitioned by an account column that statements may be addressed to.
pub const ADDRESSABLE_TABLES: [&str; 6] = [
    "user_update_events",
    "dialogs",
    "message_boxes",
    "notify_settings",
    "contacts",
    "reverse_contacts",
];

/// One of the [`USER_PARTITIONS`] partitions: the remainder of an account's hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Partition(u32);

impl Partition {
    /// The partition holding `user`'s rows in every table partitioned by an account column.
    pub fn of(user: UserId) -> Partition {
        Partition(remainder(user.get(), USER_PARTITIONS))
    }

    pub fn get(self) -> u32 {
        self.0
    }

    /// Every partition, in remainder order.
    pub fn all() -> impl Iterator<Item = Partition> {
        (0..USER_PARTITIONS).map(Partition)
    }
}

/// Postgres's `HASH_PARTITION_SEED` (src/include/catalog/partition.h).
const HASH_PARTITION_SEED: u64 = 0x7A5B_2236_7996_DCFD;

/// The remainder Postgres routes a bigint partition key to among `modulus` hash partitions:
/// `hashint8extended(key, seed)` (the bigint's halves folded into 32 bits, so that equal values of
/// the integer types hash alike), combined into the row hash with `hash_combine64(0, …)`, modulo.
fn remainder(key: i64, modulus: u32) -> u32 {
    let lo = key as u32;
    let hi = (key >> 32) as u32;
    let folded = lo ^ if key >= 0 { hi } else { !hi };
    let hash = hash_uint32_extended(folded, HASH_PARTITION_SEED);
    let row_hash = hash.wrapping_add(0x49a0_f4dd_15e5_a8e3); // hash_combine64(0, hash)
    (row_hash % u64::from(modulus)) as u32
}

/// Bob Jenkins's lookup3 over one 32-bit word with a 64-bit seed, as Postgres's
/// `hash_bytes_uint32_extended` (src/common/hashfn.c).
fn hash_uint32_extended(k: u32, seed: u64) -> u64 {
    let init = 0x9e37_79b9u32.wrapping_add(4).wrapping_add(3_923_095);
    let (mut a, mut b, mut c) = (init, init, init);
    if seed != 0 {
        a = a.wrapping_add((seed >> 32) as u32);
        b = b.wrapping_add(seed as u32);
        mix(&mut a, &mut b, &mut c);
    }
    a = a.wrapping_add(k);
    finish(&mut a, &mut b, &mut c);
    (u64::from(b) << 32) | u64::from(c)
}

fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

fn finish(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

/// `sql` with each `FROM` or `JOIN` of the named tables turned to `partition`'s table, under the
/// table's own name as alias (or the alias it had), so the rest of the statement reads the same.
/// Only for statements in which every row read from those tables is the one account's.
pub fn address(sql: &str, tables: &[&str], partition: Partition) -> String {
    let mut out = String::with_capacity(sql.len() + 64);
    let mut rest = sql;
    'scan: while !rest.is_empty() {
        for kw in ["FROM ", "JOIN "] {
            let Some(after_kw) = rest.strip_prefix(kw) else {
                continue;
            };
            let preceded_by_word = out.chars().last().is_some_and(is_ident_char);
            for table in tables {
                let Some(after) = after_kw.strip_prefix(table) else {
                    continue;
                };
                if preceded_by_word || after.chars().next().is_some_and(is_ident_char) {
                    continue;
                }
                out.push_str(kw);
                out.push_str(&format!("{table}_p{}", partition.0));
                if !has_alias(after) {
                    out.push(' ');
                    out.push_str(table);
                }
                rest = after;
                continue 'scan;
            }
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether the text after a table name starts with an alias (a word that is not a keyword
/// ending the table reference).
fn has_alias(after: &str) -> bool {
    let word: String = after
        .trim_start()
        .chars()
        .take_while(|c| is_ident_char(*c))
        .collect();
    const ENDS: [&str; 13] = [
        "WHERE", "ON", "LEFT", "RIGHT", "INNER", "FULL", "CROSS", "JOIN", "ORDER", "GROUP",
        "LIMIT", "UNION", "USING",
    ];
    !word.is_empty() && !ENDS.iter().any(|k| k.eq_ignore_ascii_case(&word))
}

/// One statement's text for every partition, and for the parents.
pub struct Addressed {
    parts: Vec<String>,
    parent: String,
}

impl Addressed {
    /// `sql` as it is for the parents, and addressed to each partition for `tables`.
    pub fn new(sql: &str, tables: &[&str]) -> Addressed {
        Addressed {
            parts: Partition::all().map(|p| address(sql, tables, p)).collect(),
            parent: sql.to_string(),
        }
    }

    /// The text for `partition`, or for the parents with `None`.
    pub fn get(&self, partition: Option<Partition>) -> &str {
        match partition {
            Some(p) => &self.parts[p.0 as usize],
            None => &self.parent,
        }
    }
}

/// Sample keys the check compares with Postgres: small, large and negative, around the
/// 32-bit boundaries where the halves fold.
static SAMPLE_KEYS: LazyLock<Vec<i64>> = LazyLock::new(|| {
    let mut keys: Vec<i64> = (1..=64).collect();
    keys.extend([
        0,
        -1,
        i64::MAX,
        i64::MIN,
        i64::from(u32::MAX),
        i64::from(u32::MAX) + 1,
        i64::from(i32::MAX),
        i64::from(i32::MIN),
        1 << 40,
        -(1 << 40) - 7,
        7_000_000_123,
        123_456_789_012_345,
    ]);
    keys
});

/// Whether every table of [`ADDRESSABLE_TABLES`] is hash-partitioned on one bigint column into
/// [`USER_PARTITIONS`] partitions named `<table>_p<remainder>`, with nothing else attached, and
/// this module's hash puts the sample keys where Postgres does. Anything else: `Ok(false)`.
pub async fn verify(conn: &mut PgConnection) -> Result<bool, sqlx::Error> {
    // Each partition's name, table, modulus and remainder as the catalog has them.
    let bounds: Vec<(String, String, String, String)> = sqlx::query_as(
        "SELECT p.relname::text, c.relname::text, pt.partstrat::text, \
                pg_get_expr(c.relpartbound, c.oid) \
         FROM pg_class p \
         JOIN pg_partitioned_table pt ON pt.partrelid = p.oid \
         JOIN pg_inherits i ON i.inhparent = p.oid \
         JOIN pg_class c ON c.oid = i.inhrelid \
         WHERE p.relname = ANY($1) AND p.relnamespace = to_regnamespace(current_schema())::oid \
           AND pt.partnatts = 1 AND pt.partclass[0] = \
               (SELECT oc.oid FROM pg_opclass oc JOIN pg_am am ON am.oid = oc.opcmethod \
                WHERE am.amname = 'hash' AND oc.opcname = 'int8_ops')",
    )
    .bind(ADDRESSABLE_TABLES.map(String::from).to_vec())
    .fetch_all(&mut *conn)
    .await?;
    for table in ADDRESSABLE_TABLES {
        let mut seen = vec![false; USER_PARTITIONS as usize];
        let mut count = 0;
        for (_, child, strategy, bound) in bounds.iter().filter(|b| b.0 == table) {
            count += 1;
            let Some(r) = hash_remainder(bound) else {
                return Ok(false);
            };
            if strategy != "h" || child != &format!("{table}_p{r}") || r >= USER_PARTITIONS {
                return Ok(false);
            }
            seen[r as usize] = true;
        }
        if count != USER_PARTITIONS as usize || seen.iter().any(|s| !s) {
            return Ok(false);
        }
    }
    // Postgres's own routing of the sample keys, against ours.
    let keys = &*SAMPLE_KEYS;
    let remainders: Vec<i32> = keys
        .iter()
        .map(|k| remainder(*k, USER_PARTITIONS) as i32)
        .collect();
    let agree: bool = sqlx::query_scalar(
        "SELECT bool_and(satisfies_hash_partition('user_update_events'::regclass, $3, r, k)) \
         FROM unnest($1::bigint[], $2::int[]) AS s(k, r)",
    )
    .bind(keys)
    .bind(&remainders)
    .bind(USER_PARTITIONS as i32)
    .fetch_one(&mut *conn)
    .await?;
    Ok(agree)
}

/// The remainder of a bound `FOR VALUES WITH (modulus M, remainder R)` whose modulus is
/// [`USER_PARTITIONS`]; `None` for any other bound.
fn hash_remainder(bound: &str) -> Option<u32> {
    let inner = bound
        .strip_prefix("FOR VALUES WITH (modulus ")?
        .strip_suffix(')')?;
    let (modulus, rem) = inner.split_once(", remainder ")?;
    (modulus.parse::<u32>().ok()? == USER_PARTITIONS).then_some(())?;
    rem.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remainders_match_postgres_for_known_keys() {
        // From Postgres 15: satisfies_hash_partition('user_update_events'::regclass, 16, 3, id)
        // holds for these ids among 1..=130, and for no other.
        let in_three: Vec<i64> = (1..=130).filter(|k| remainder(*k, 16) == 3).collect();
        assert_eq!(in_three, vec![4, 6, 24, 29, 55, 105, 109, 121, 122, 127]);
    }

    #[test]
    fn statements_are_addressed_under_their_own_names() {
        let p = Partition(7);
        assert_eq!(
            address("SELECT x FROM dialogs WHERE user_id = $1", &["dialogs"], p),
            "SELECT x FROM dialogs_p7 dialogs WHERE user_id = $1"
        );
        assert_eq!(
            address(
                "SELECT 1 FROM notify_settings n WHERE n.owner_user_id = dialogs.user_id) FROM dialogs)",
                &["dialogs", "notify_settings"],
                p
            ),
            "SELECT 1 FROM notify_settings_p7 n WHERE n.owner_user_id = dialogs.user_id) FROM dialogs_p7 dialogs)"
        );
        assert_eq!(
            address(
                "FROM users u LEFT JOIN contacts c ON c.owner_user_id = $1 FROM reverse_contacts r",
                &["contacts", "reverse_contacts"],
                p
            ),
            "FROM users u LEFT JOIN contacts_p7 c ON c.owner_user_id = $1 FROM reverse_contacts_p7 r"
        );
        // Other tables, longer names and names inside other words stay.
        let sql = "SELECT dialogs FROM dialogs_pinned JOIN dialog_filters ON x FROM user_sequences";
        assert_eq!(address(sql, &["dialogs", "user_update_events"], p), sql);
        assert_eq!(
            address("SELECT * FROM message_boxes", &["message_boxes"], p),
            "SELECT * FROM message_boxes_p7 message_boxes"
        );
    }

    #[test]
    fn only_the_migrations_bounds_are_read() {
        assert_eq!(
            hash_remainder("FOR VALUES WITH (modulus 16, remainder 11)"),
            Some(11)
        );
        assert_eq!(
            hash_remainder("FOR VALUES WITH (modulus 32, remainder 11)"),
            None
        );
        assert_eq!(hash_remainder("DEFAULT"), None);
    }
}
