//! The reads of the `reads_*` phases: what each call asks over HTTP, and the pgbench script of the
//! statements the server runs for it (the very text of `infrastructure::postgres::store::statements`,
//! its placeholders turned into pgbench variables), on the same accounts and chats, so that the
//! ratio HTTP / pgbench says what the application costs on top of the SQL it cannot avoid.
//!
//! The chats are the loader's (each account writes to its ten "friends", the accounts 1..=10 ids
//! after it), so the phases run on the scale database after its last point, when chats are deep.
//! The token lookup is not in the scripts: the server answers it from its cache.

use domain::UserId;
use infrastructure::postgres::partitions::{Partition, USER_PARTITIONS};
use infrastructure::postgres::store::statements;
use serde_json::{json, Value};

use crate::loader::FRIENDS;

/// getMessages asks for this many consecutive box ids of the caller.
pub const MESSAGES_PER_CALL: i32 = 10;
/// …starting at a random one of 1..=this (every account has that many boxes by then).
pub const MESSAGES_FIRST_MAX: i32 = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOp {
    History,
    Difference,
    Dialogs,
    Messages,
}

impl ReadOp {
    pub const ALL: [ReadOp; 4] = [
        ReadOp::History,
        ReadOp::Difference,
        ReadOp::Dialogs,
        ReadOp::Messages,
    ];

    /// The op's name in the report.
    pub fn name(self) -> &'static str {
        match self {
            ReadOp::History => "getHistory(50)",
            ReadOp::Difference => "getDifference(100)",
            ReadOp::Dialogs => "getDialogs(100)",
            ReadOp::Messages => "getMessages(10)",
        }
    }

    pub fn method(self) -> &'static str {
        match self {
            ReadOp::History => "messages.getHistory",
            ReadOp::Difference => "updates.getDifference",
            ReadOp::Dialogs => "messages.getDialogs",
            ReadOp::Messages => "messages.getMessages",
        }
    }

    /// Statements the server runs per call (after the cached token lookup).
    pub fn statements(self) -> usize {
        2
    }
}

/// The friend `f` (1..=FRIENDS) of account index `u` among `n` (indexes 0..n, ids index + 1).
pub fn friend(u: usize, f: usize, n: usize) -> usize {
    (u + f) % n
}

/// The JSON body of one call by account index `owner` (`peer_json` names the friend chat;
/// `first` is the first box id getMessages asks for).
pub fn body(op: ReadOp, peer_json: Value, first: i32) -> Value {
    match op {
        ReadOp::History => json!({"peer": peer_json, "limit": 50}),
        // pts 0: a device that knows nothing reads one full 100-event slice.
        ReadOp::Difference => json!({"pts": 0, "date": 0, "qts": 0}),
        ReadOp::Dialogs => json!({"limit": 100, "offset_peer": {"_": "inputPeerEmpty"}}),
        ReadOp::Messages => json!({
            "id": (first..first + MESSAGES_PER_CALL)
                .map(|id| json!({"_": "inputMessageID", "id": id}))
                .collect::<Vec<_>>()
        }),
    }
}

/// `sql` with `$1`, `$2`, … replaced by `args` (highest first, so `$1` does not eat `$10`).
fn bind(sql: &str, args: &[&str]) -> String {
    let mut out = sql.to_string();
    for (i, a) in args.iter().enumerate().rev() {
        out = out.replace(&format!("${}", i + 1), a);
    }
    out
}

/// `ARRAY[…]::bigint[]` of account `:u` and its neighbours within `reach` ids either side
/// (wrapping among 1..=n), as SQL over the pgbench variable.
fn around(n: usize, reach: i64, after_only: bool) -> String {
    let from = if after_only { 1 } else { -reach };
    let mut ids = vec![":u".to_string()];
    for k in from..=reach {
        if k != 0 {
            ids.push(format!("1 + (:u - 1 + {} + {n}) % {n}", k));
        }
    }
    format!("ARRAY[{}]::bigint[]", ids.join(", "))
}

/// The pgbench scripts of one call of `op` by a random account of 1..=n, with their weights:
/// one per partition, running the statements addressed to that partition as the server does
/// (infrastructure::postgres::partitions), for a random account of it; weighted by its accounts.
pub fn pgbench_scripts(op: ReadOp, n: usize) -> Vec<(String, usize)> {
    let n = n.max(2);
    let mut of: Vec<Vec<usize>> = vec![Vec::new(); USER_PARTITIONS as usize];
    for id in 1..=n {
        let user = UserId::new(id as i64).expect("ids from 1");
        of[Partition::of(user).get() as usize].push(id);
    }
    Partition::all()
        .zip(of)
        .filter(|(_, ids)| !ids.is_empty())
        .map(|(p, ids)| {
            // pgbench has no arrays: the k-th account of the partition by a CASE over k (a
            // CASE needs a WHEN: one account is itself).
            let last = ids.len() - 1;
            let pick = if last == 0 {
                ids[0].to_string()
            } else {
                let mut pick = String::from("CASE");
                for (k, id) in ids[..last].iter().enumerate() {
                    pick.push_str(&format!(" WHEN :k = {k} THEN {id}"));
                }
                pick.push_str(&format!(" ELSE {} END", ids[last]));
                pick
            };
            let head = vec![
                format!("\\set k random(0, {last})"),
                format!("\\set u {pick}"),
            ];
            (script(op, n, head, Some(p)), ids.len())
        })
        .collect()
}

/// One call of `op` by the account `:u` that `head` sets, through the statements for `p`.
fn script(op: ReadOp, n: usize, head: Vec<String>, p: Option<Partition>) -> String {
    let mut lines = head;
    match op {
        ReadOp::History => {
            lines.push(format!("\\set f random(1, {})", FRIENDS.min(n as i64 - 1)));
            lines.push(format!("\\set p 1 + (:u - 1 + :f) % {n}"));
            lines.push(bind(
                statements::history_page(p),
                &[
                    ":u",
                    ":p",
                    "9223372036854775807::bigint",
                    "0::bigint",
                    "0::bigint",
                    "50::bigint",
                ],
            ));
            // The page's users: the two sides of the chat.
            lines.push(bind(
                statements::users_seen_by(p),
                &[":u", "ARRAY[:u, :p]::bigint[]"],
            ));
        }
        ReadOp::Difference => {
            lines.push(bind(statements::difference(p), &[":u", "0", "101::bigint"]));
            // The slice's users: the account's chats (its friends and those it is a friend of).
            lines.push(bind(
                statements::users_seen_by(p),
                &[":u", &around(n, FRIENDS, false)],
            ));
        }
        ReadOp::Dialogs => {
            lines.push(bind(
                statements::dialog_list(false, p),
                &[
                    ":u",
                    "0::smallint",
                    "100::bigint",
                    "false",
                    "0",
                    "0",
                    "0::bigint",
                ],
            ));
            lines.push(bind(
                statements::users_seen_by(p),
                &[":u", &around(n, FRIENDS, false)],
            ));
        }
        ReadOp::Messages => {
            lines.push(format!("\\set b random(1, {MESSAGES_FIRST_MAX})"));
            let ids: Vec<String> = (0..MESSAGES_PER_CALL)
                .map(|k| format!(":b + {k}"))
                .collect();
            lines.push(bind(
                statements::messages_by_ids(p),
                &[":u", &format!("ARRAY[{}]::int[]", ids.join(", "))],
            ));
            // About as many users as ten boxes name: the account and ten of its chats.
            lines.push(bind(
                statements::users_seen_by(p),
                &[":u", &around(n, FRIENDS, true)],
            ));
        }
    }
    let mut script = String::new();
    for l in lines {
        script.push_str(&l);
        if !l.starts_with('\\') {
            script.push(';');
        }
        script.push('\n');
    }
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_have_no_placeholder_left() {
        for op in ReadOp::ALL {
            let scripts = pgbench_scripts(op, 100);
            assert_eq!(scripts.len(), USER_PARTITIONS as usize);
            assert_eq!(scripts.iter().map(|(_, w)| w).sum::<usize>(), 100);
            for (s, _) in &scripts {
                assert!(!s.contains('$'), "{op:?}: {s}");
                let statements = s.lines().filter(|l| !l.starts_with('\\')).count();
                assert_eq!(statements, op.statements(), "{op:?}: {s}");
                assert!(s.contains("_p"), "{op:?} addressed: {s}");
            }
        }
        // Few accounts: partitions of one account pick it without a CASE, empty ones have none.
        let few = pgbench_scripts(ReadOp::Difference, 5);
        assert_eq!(few.iter().map(|(_, w)| w).sum::<usize>(), 5);
        for (s, w) in &few {
            assert_eq!(s.contains("CASE"), *w > 1, "{s}");
            assert!(!s.contains("CASE ELSE"), "{s}");
        }
        let ten: Vec<String> = (0..10).map(|i| format!("a{i}")).collect();
        let ten: Vec<&str> = ten.iter().map(String::as_str).collect();
        assert_eq!(bind("$1 $10 $2", &ten), "a0 a9 a1");
    }
}
