//! The CPU worker pool of `pool` mode: fixed OS threads created at start, a bounded queue, and
//! results returned over a oneshot channel so the event loop never waits on CPU work.
//!
//! A full queue refuses at once (the caller answers 503 + Retry-After) instead of letting
//! latency and memory grow without bound. A task that passes its CPU deadline fails (504) and
//! its worker is replaced, as the seeds' production pool does. Rust cannot kill a thread, so the
//! work itself checks its CPU clock and stops at the deadline ([`Work::run`]); the worker then
//! hands its place to a fresh thread and exits, so the pool keeps its size.

use std::collections::VecDeque;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::stats::Stats;
use crate::work::{DeadlineExceeded, Done, Work};

/// Pool worker stacks: the work is shallow (fib recursion of depth <= 45), so 256 KiB is ample
/// and keeps the address space small.
const WORKER_STACK: usize = 256 * 1024;

/// Why a task did not produce a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskError {
    /// The queue was full; nothing was queued.
    QueueFull,
    /// The task used its whole CPU deadline and was abandoned.
    DeadlineExceeded,
    /// The pool is shutting down.
    Closed,
}

struct Job {
    work: Work,
    reply: oneshot::Sender<Result<Done, TaskError>>,
}

struct Shared {
    queue: Mutex<State>,
    ready: Condvar,
    capacity: usize,
    deadline: Duration,
    stats: Arc<Stats>,
}

struct State {
    jobs: VecDeque<Job>,
    closed: bool,
    next_worker: usize,
}

/// A fixed-size pool of CPU worker threads with a bounded queue.
pub struct Pool {
    shared: Arc<Shared>,
    size: usize,
}

impl Pool {
    /// Starts `size` workers. At most `capacity` tasks wait beyond those running; each task may
    /// use `deadline` of CPU time.
    pub fn start(
        size: usize,
        capacity: usize,
        deadline: Duration,
        stats: Arc<Stats>,
    ) -> std::io::Result<Pool> {
        let shared = Arc::new(Shared {
            queue: Mutex::new(State {
                jobs: VecDeque::with_capacity(capacity.min(1024)),
                closed: false,
                next_worker: 0,
            }),
            ready: Condvar::new(),
            capacity,
            deadline,
            stats,
        });
        for _ in 0..size {
            spawn_worker(&shared)?;
        }
        Ok(Pool { shared, size })
    }

    /// Number of workers (constant: replaced workers are counted once).
    pub fn size(&self) -> usize {
        self.size
    }

    /// Queues `work`. Fails at once with [`TaskError::QueueFull`] when `capacity` tasks are
    /// already waiting, or [`TaskError::Closed`] after [`Pool::close`].
    pub fn submit(
        &self,
        work: Work,
    ) -> Result<oneshot::Receiver<Result<Done, TaskError>>, TaskError> {
        let (reply, rx) = oneshot::channel();
        let mut state = self.shared.queue.lock().map_err(|_| TaskError::Closed)?;
        if state.closed {
            return Err(TaskError::Closed);
        }
        if state.jobs.len() >= self.shared.capacity {
            self.shared.stats.rejected.fetch_add(1, Relaxed);
            return Err(TaskError::QueueFull);
        }
        state.jobs.push_back(Job { work, reply });
        self.shared.stats.queue_push();
        drop(state);
        self.shared.ready.notify_one();
        Ok(rx)
    }

    /// Stops the workers once the queued tasks are done; tasks submitted later are refused.
    pub fn close(&self) {
        if let Ok(mut state) = self.shared.queue.lock() {
            state.closed = true;
        }
        self.shared.ready.notify_all();
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.close();
    }
}

fn spawn_worker(shared: &Arc<Shared>) -> std::io::Result<()> {
    let id = {
        let mut state = shared
            .queue
            .lock()
            .map_err(|_| std::io::Error::other("pool lock poisoned"))?;
        state.next_worker += 1;
        state.next_worker
    };
    let shared = Arc::clone(shared);
    std::thread::Builder::new()
        .name(format!("cpu-worker-{id}"))
        .stack_size(WORKER_STACK)
        .spawn(move || worker(shared))?;
    Ok(())
}

fn worker(shared: Arc<Shared>) {
    loop {
        let job = {
            let Ok(mut state) = shared.queue.lock() else {
                return;
            };
            loop {
                if let Some(job) = state.jobs.pop_front() {
                    shared.stats.queue_pop();
                    break job;
                }
                if state.closed {
                    return;
                }
                state = match shared.ready.wait(state) {
                    Ok(s) => s,
                    Err(_) => return,
                };
            }
        };
        // The client went away while the task waited: do not burn CPU for nobody.
        if job.reply.is_closed() {
            continue;
        }
        match job.work.run(Some(shared.deadline)) {
            Ok(done) => {
                let _ = job.reply.send(Ok(done));
            }
            Err(DeadlineExceeded) => {
                shared.stats.timed_out.fetch_add(1, Relaxed);
                let _ = job.reply.send(Err(TaskError::DeadlineExceeded));
                // Hand this worker's place to a fresh thread, then end this one. Counted
                // first: the new worker may serve (and be observed) before this thread runs on.
                shared.stats.workers_replaced.fetch_add(1, Relaxed);
                match spawn_worker(&shared) {
                    Ok(()) => {
                        tracing::warn!(
                            deadline_ms = shared.deadline.as_millis() as u64,
                            "a pool task passed its CPU deadline; its worker was replaced"
                        );
                        return;
                    }
                    Err(e) => {
                        shared.stats.workers_replaced.fetch_sub(1, Relaxed);
                        // Keeping this thread is better than shrinking the pool.
                        tracing::error!(error = %e, "could not start a replacement worker; keeping the old one");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Mode;

    fn stats() -> Arc<Stats> {
        let limit = benchmatrix_quota::detect_in(std::path::Path::new("/nonexistent"), None, 2);
        Arc::new(Stats::new(Mode::Pool, limit, 1, 1))
    }

    #[tokio::test]
    async fn runs_work_and_returns_the_result() {
        let pool = Pool::start(1, 4, Duration::from_secs(5), stats()).unwrap();
        let done = pool
            .submit(Work::Fib { n: 20 })
            .unwrap()
            .await
            .unwrap()
            .unwrap();
        assert_eq!(done.value, Some(6765));
    }

    #[tokio::test]
    async fn a_full_queue_refuses_at_once() {
        let stats = stats();
        let pool = Pool::start(1, 1, Duration::from_secs(5), Arc::clone(&stats)).unwrap();
        let running = pool.submit(Work::Burn { ms: 300 }).unwrap();
        // Wait until the worker has taken the first task, so the queue is empty again.
        while stats.queue_depth.load(Relaxed) != 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let queued = pool.submit(Work::Burn { ms: 1 }).unwrap();
        assert_eq!(
            pool.submit(Work::Burn { ms: 1 }).unwrap_err(),
            TaskError::QueueFull
        );
        assert_eq!(stats.rejected.load(Relaxed), 1);
        assert_eq!(stats.queue_peak.load(Relaxed), 1);
        assert!(running.await.unwrap().is_ok());
        assert!(queued.await.unwrap().is_ok());
    }

    #[tokio::test]
    async fn a_task_past_its_deadline_fails_and_the_worker_is_replaced() {
        let stats = stats();
        let pool = Pool::start(1, 4, Duration::from_millis(20), Arc::clone(&stats)).unwrap();
        let r = pool
            .submit(Work::Burn { ms: 5_000 })
            .unwrap()
            .await
            .unwrap();
        assert_eq!(r, Err(TaskError::DeadlineExceeded));
        assert_eq!(stats.timed_out.load(Relaxed), 1);
        // The replacement serves the next task.
        let ok = pool.submit(Work::Burn { ms: 1 }).unwrap().await.unwrap();
        assert!(ok.is_ok());
        assert_eq!(stats.workers_replaced.load(Relaxed), 1);
        assert_eq!(pool.size(), 1);
    }

    #[tokio::test]
    async fn a_closed_pool_refuses() {
        let pool = Pool::start(1, 4, Duration::from_secs(1), stats()).unwrap();
        pool.close();
        assert_eq!(
            pool.submit(Work::Burn { ms: 1 }).unwrap_err(),
            TaskError::Closed
        );
    }
}
