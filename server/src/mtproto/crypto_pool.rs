//! Where the key exchange's exponentiations run: on tokio's blocking threads, at most
//! [`super::limits::HANDSHAKE_WORKERS`] at once, so a flood of handshakes neither stalls the
//! async workers serving everybody else nor starts a thread per handshake.

use std::sync::Arc;

use tokio::sync::Semaphore;

pub struct CryptoPool {
    slots: Arc<Semaphore>,
}

impl CryptoPool {
    pub fn new(workers: usize) -> Self {
        Self {
            slots: Arc::new(Semaphore::new(workers.max(1))),
        }
    }

    /// Runs `job` once a worker is free; `None` if it panicked.
    pub async fn run<T: Send + 'static>(
        &self,
        job: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        let permit = self.slots.clone().acquire_owned().await.ok()?;
        tokio::task::spawn_blocking(move || {
            let out = job();
            drop(permit);
            out
        })
        .await
        .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_the_pool_size_runs_at_once_off_the_async_workers() {
        let pool = Arc::new(CryptoPool::new(2));
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let jobs: Vec<_> = (0..12)
            .map(|i| {
                let (pool, running, most) = (pool.clone(), running.clone(), most.clone());
                tokio::spawn(async move {
                    pool.run(move || {
                        let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        // A blocking sleep: were it on an async worker, the ticker below would stall.
                        std::thread::sleep(Duration::from_millis(30));
                        running.fetch_sub(1, Ordering::SeqCst);
                        i
                    })
                    .await
                })
            })
            .collect();
        // The async workers stay free meanwhile.
        let ticks = tokio::spawn(async {
            let mut n = 0;
            for _ in 0..10 {
                tokio::time::sleep(Duration::from_millis(10)).await;
                n += 1;
            }
            n
        });
        let mut done = Vec::new();
        for j in jobs {
            done.push(j.await.unwrap().unwrap());
        }
        assert_eq!(done, (0..12).collect::<Vec<_>>());
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "never more than two at once"
        );
        assert_eq!(ticks.await.unwrap(), 10);
        assert_eq!(pool.run(|| panic!("boom")).await, None::<()>);
    }
}
