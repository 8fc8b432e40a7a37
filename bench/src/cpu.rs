//! CPU time of this process's threads from `/proc/self/task/*/schedstat` (nanoseconds on CPU),
//! split into the load generator's threads (named [`LOAD_THREAD`]) and everything else — the
//! server, which the bench runs in process. The bench's own orchestration is idle during a phase.

/// The thread name of the runtime that drives the HTTP load of the read phases.
pub const LOAD_THREAD: &str = "bench-load";

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuSample {
    /// Nanoseconds on CPU of every thread but the load generator's.
    pub server_ns: u64,
    pub load_ns: u64,
}

/// The CPU time so far of each live thread, split by name. Linux only; zero elsewhere.
pub fn sample() -> CpuSample {
    let mut s = CpuSample::default();
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

/// Microseconds of server CPU per operation between two samples.
pub fn server_us_per_op(before: CpuSample, after: CpuSample, ops: u64) -> Option<f64> {
    if ops == 0 || after.server_ns < before.server_ns {
        return None;
    }
    Some((after.server_ns - before.server_ns) as f64 / 1000.0 / ops as f64)
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
