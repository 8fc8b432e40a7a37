//! CPU time of this process's threads from `/proc/self/task/*/schedstat` (nanoseconds on CPU),
//! split into the load generator's threads (named [`LOAD_THREAD`]) and everything else — the
//! server, which the bench runs in process. The bench's own orchestration is idle during a phase.
//! And the machine's: every core's busy time (`/proc/stat`), the Postgres processes' own
//! (`/proc/<pid>/schedstat` of each process named `postgres`) and this process's waited-for
//! children's (pgbench, `/proc/self/stat`), so a phase can say where the CPU of a call went.

/// The thread name of the runtime that drives the HTTP load of the read phases.
pub const LOAD_THREAD: &str = "bench-load";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuSample {
    /// Nanoseconds on CPU of every thread but the load generator's.
    pub server_ns: u64,
    pub load_ns: u64,
    /// Busy time of every core of the machine.
    pub machine_ns: u64,
    /// The live Postgres processes' (backends, walsenders, the WAL writer, …).
    pub postgres_ns: u64,
    /// This process's children that ended and were waited for (a pgbench run).
    pub children_ns: u64,
}

/// Linux's USER_HZ, the unit of `/proc/stat` and of a process's `cutime`: 100 on every
/// architecture Linux runs on today.
const TICK_NS: u64 = 10_000_000;

/// The CPU time so far of each live thread, split by name, and the machine's. Linux only; zero
/// elsewhere.
pub fn sample() -> CpuSample {
    let mut s = CpuSample {
        machine_ns: machine_busy_ns(),
        postgres_ns: postgres_ns(),
        children_ns: children_ns(),
        ..CpuSample::default()
    };
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return s;
    };
    for t in tasks.flatten() {
        let dir = t.path();
        let ns: u64 = std::fs::read_to_string(dir.join("schedstat"))
            .ok()
            .and_then(|l| l.split_whitespace().next()?.parse().ok())
            .unwrap_or(0);
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        if comm.trim_end().starts_with(LOAD_THREAD) {
            s.load_ns += ns;
        } else {
            s.server_ns += ns;
        }
    }
    s
}

/// The first line of `/proc/stat`: user, nice, system, idle, iowait, irq, softirq, steal; busy is
/// all but idle and iowait.
fn machine_busy_ns() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/stat") else {
        return 0;
    };
    let Some(cpu) = stat.lines().next() else {
        return 0;
    };
    let ticks: Vec<u64> = cpu
        .split_whitespace()
        .skip(1)
        .take(8)
        .filter_map(|v| v.parse().ok())
        .collect();
    let busy: u64 = ticks
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 3 && *i != 4)
        .map(|(_, t)| t)
        .sum();
    busy * TICK_NS
}

/// The CPU time of every live process named `postgres`.
fn postgres_ns() -> u64 {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return 0;
    };
    procs
        .flatten()
        .filter(|p| {
            p.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter(|p| {
            std::fs::read_to_string(p.path().join("comm")).is_ok_and(|c| c.trim_end() == "postgres")
        })
        .filter_map(|p| {
            std::fs::read_to_string(p.path().join("schedstat"))
                .ok()?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// `cutime + cstime` of `/proc/self/stat` (fields 16 and 17, after the parenthesised name).
fn children_ns() -> u64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0;
    };
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0;
    };
    // `rest` starts at field 3 (state): cutime and cstime are its 14th and 15th.
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(13)
        .take(2)
        .filter_map(|v| v.parse().ok())
        .collect();
    f.iter().sum::<u64>() * TICK_NS
}

/// Microseconds of server CPU per operation between two samples.
pub fn server_us_per_op(before: CpuSample, after: CpuSample, ops: u64) -> Option<f64> {
    per_op(before.server_ns, after.server_ns, ops)
}

fn per_op(before: u64, after: u64, ops: u64) -> Option<f64> {
    if ops == 0 || after < before {
        return None;
    }
    Some((after - before) as f64 / 1000.0 / ops as f64)
}

/// Where the machine's CPU of a phase went, in µs per operation: in total, in the server's
/// threads, in the load generator's, in Postgres's processes and in pgbench (a child run in the
/// phase); what is left is the kernel's and other processes'.
pub fn breakdown(before: CpuSample, after: CpuSample, ops: u64) -> serde_json::Value {
    let us = |b: u64, a: u64| per_op(b, a, ops).map(|v| (v * 10.0).round() / 10.0);
    serde_json::json!({
        "machine": us(before.machine_ns, after.machine_ns),
        "server": us(before.server_ns, after.server_ns),
        "load_generator": us(before.load_ns, after.load_ns),
        "postgres": us(before.postgres_ns, after.postgres_ns),
        "pgbench": us(before.children_ns, after.children_ns),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn this_thread_counts_as_server() {
        let a = super::sample();
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        let b = super::sample();
        if std::path::Path::new("/proc/self/task").exists() {
            assert!(b.server_ns > a.server_ns);
            assert!(super::server_us_per_op(a, b, 1).is_some());
        }
    }
}
