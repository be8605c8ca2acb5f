//! Fork-join on one thread kept for it: [`join`] runs two closures at once,
//! one here and one on the helper thread, which waits between calls.
//!
//! The checker splits a large file's analysis in two (the host rules beside
//! the statements' facts, the node index beside the model). A thread spawned
//! per split cost about what the split saved: a host edit in a 5,000-line
//! file paid a `clone`, a fresh stack and the thread's exit on every
//! keystroke. This module sits below every layer and knows nothing of them.

use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send + 'static>;

struct Helper {
    jobs: Mutex<mpsc::Sender<Job>>,
    /// Set while a job of a [`join`] is out on the helper: a second caller
    /// (tests analyse on many threads) runs both halves itself.
    taken: AtomicBool,
}

/// The helper thread, started on first use; `None` if it could not start.
fn helper() -> Option<&'static Helper> {
    static HELPER: OnceLock<Option<Helper>> = OnceLock::new();
    HELPER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            std::thread::Builder::new()
                .name("kl-fork".into())
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        job();
                    }
                })
                .ok()
                .map(|_| Helper { jobs: Mutex::new(tx), taken: AtomicBool::new(false) })
        })
        .as_ref()
}

/// Runs `here` on this thread and `there` on the helper thread at the same
/// time, and returns both results once both are done. Where the helper is
/// busy with another caller's `there`, or could not start, `there` runs on
/// this thread after `here`. A panic in either is raised here, after both
/// have finished.
pub fn join<A, B>(here: impl FnOnce() -> A, there: impl FnOnce() -> B + Send) -> (A, B)
where
    B: Send,
{
    let Some(h) = helper().filter(|h| !h.taken.swap(true, Ordering::Acquire)) else {
        let a = here();
        return (a, there());
    };
    let (done_tx, done_rx) = mpsc::sync_channel::<std::thread::Result<B>>(1);
    let job: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
        let _ = done_tx.send(catch_unwind(AssertUnwindSafe(there)));
    });
    // SAFETY: the job borrows from this frame (`there`'s captures, `B`'s
    // lifetime). This function does not return or unwind before
    // `done_rx.recv()` has answered, and the job sends only after `there`
    // has run and been dropped; what it touches afterwards (the channel's
    // sender) is its own. A job the helper never got is run here below,
    // so the receive always answers.
    let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) };
    let sent = match h.jobs.lock() {
        Ok(jobs) => jobs.send(job).map_err(|e| e.0),
        Err(_) => Err(job),
    };
    if let Err(job) = sent {
        job();
    }
    let a = catch_unwind(AssertUnwindSafe(here));
    let b = wait_for(&done_rx).unwrap_or_else(|_| unreachable!("the job sends before it ends"));
    h.taken.store(false, Ordering::Release);
    match (a, b) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(p), _) | (_, Err(p)) => resume_unwind(p),
    }
}

/// How long [`join`] spins for the helper's half before it sleeps: the
/// halves are split to end together, and a thread put to sleep for a few
/// microseconds is woken (on another core of a virtual machine) late.
const SPIN: std::time::Duration = std::time::Duration::from_micros(100);

/// The helper's result: spun for up to [`SPIN`], then slept for.
fn wait_for<B>(done: &mpsc::Receiver<B>) -> Result<B, mpsc::RecvError> {
    let began = std::time::Instant::now();
    loop {
        match done.try_recv() {
            Ok(b) => return Ok(b),
            Err(mpsc::TryRecvError::Disconnected) => return Err(mpsc::RecvError),
            Err(mpsc::TryRecvError::Empty) if began.elapsed() < SPIN => std::hint::spin_loop(),
            Err(mpsc::TryRecvError::Empty) => return done.recv(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_halves_run_and_see_borrowed_data() {
        let data: Vec<u64> = (1..=1000).collect();
        let (a, b) = join(|| data[..500].iter().sum::<u64>(), || data[500..].iter().sum::<u64>());
        assert_eq!(a + b, 500_500);
        // The second half runs on the helper thread whenever it is free
        // (other tests' joins may hold it for a moment: then it runs here).
        let on_helper = (0..1000).any(|_| {
            let (_, name) = join(|| (), || std::thread::current().name().map(str::to_string));
            name.as_deref() == Some("kl-fork") || {
                std::thread::sleep(std::time::Duration::from_millis(1));
                false
            }
        });
        assert!(on_helper, "the helper thread never ran the second half");
    }

    #[test]
    fn a_helper_half_slower_than_the_spin_is_waited_for() {
        let slow = SPIN * 50;
        let began = std::time::Instant::now();
        let (a, b) = join(
            || 1,
            || {
                std::thread::sleep(slow);
                2
            },
        );
        assert_eq!((a, b), (1, 2));
        assert!(began.elapsed() >= slow);
    }

    #[test]
    fn a_panic_on_the_helper_is_raised_here_and_the_helper_lives_on() {
        let caught = catch_unwind(|| join(|| 1, || -> u32 { panic!("there") }));
        assert!(caught.is_err());
        assert_eq!(join(|| 2, || 3), (2, 3));
    }

    #[test]
    fn concurrent_callers_all_get_their_own_results() {
        let threads: Vec<_> = (0..8u64)
            .map(|t| {
                std::thread::spawn(move || {
                    (0..200u64).map(|i| join(|| t * i, || t + i)).map(|(a, b)| a + b).sum::<u64>()
                })
            })
            .collect();
        for (t, th) in threads.into_iter().enumerate() {
            let t = t as u64;
            let want: u64 = (0..200u64).map(|i| t * i + t + i).sum();
            assert_eq!(th.join().expect("no panic"), want);
        }
    }
}
