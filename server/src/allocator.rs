//! The allocator of every process that serves calls: the `ptslog` binary and the benchmarks that
//! run the server in process (so they measure what production runs). Each binary declares it:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOCATOR: ptslog_server::allocator::Serving = ptslog_server::allocator::Serving;
//! ```
//!
//! Why not the system's: a read allocates and frees many small objects (decoded rows, events,
//! strings, the answer's buffer) on threads that hand them to each other, and glibc's malloc spent
//! about 12 % of the server's CPU on it in a profile of getDifference (docs/performance.md,
//! "The allocator").

pub use mimalloc::MiMalloc as Serving;
