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
use std::sync::{mpsc, Arc, Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send + 'static>;

/// A job handed to the helper, which the caller takes back and runs itself if
/// the helper has not started it by the time the caller's own half is done.
type Slot = Arc<Mutex<Option<Job>>>;

struct Helper {
    jobs: Mutex<mpsc::Sender<Slot>>,
    /// Set while a job of a [`join`] is out on the helper: a second caller
    /// (tests analyse on many threads) runs both halves itself.
    taken: AtomicBool,
}

/// The helper thread, started on first use; `None` if it could not start.
fn helper() -> Option<&'static Helper> {
    static HELPER: OnceLock<Option<Helper>> = OnceLock::new();
    HELPER
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Slot>();
            std::thread::Builder::new()
                .name("kl-fork".into())
                .spawn(move || {
                    while let Ok(slot) = rx.recv() {
                        let job = take(&slot);
                        if let Some(job) = job {
                            job();
                        }
                    }
                })
                .ok()
                .map(|_| Helper { jobs: Mutex::new(tx), taken: AtomicBool::new(false) })
        })
        .as_ref()
}

/// The job in `slot`, if nobody has taken it yet.
fn take(slot: &Slot) -> Option<Job> {
    slot.lock().unwrap_or_else(|p| p.into_inner()).take()
}

/// Runs `here` on this thread and `there` on the helper thread at the same
/// time, and returns both results once both are done. Where the helper is
/// busy with another caller's `there`, could not start, or has not started
/// `there` by the time `here` is done (a thread woken on another core of a
/// virtual machine can be late by more than the work), `there` runs on this
/// thread after `here`. A panic in either is raised here, after both have
/// finished.
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
    // lifetime). It is run exactly once, by whoever takes it out of the slot
    // first: the helper, or this function after `here`. This function does
    // not return or unwind before the slot is empty and `done_rx.recv()` has
    // answered, and the job sends only after `there` has run and been
    // dropped; what the job touches afterwards (the channel's sender) is its
    // own, and the helper keeps only the empty slot.
    let job: Job = unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Job>(job) };
    let slot: Slot = Arc::new(Mutex::new(Some(job)));
    if let Ok(jobs) = h.jobs.lock() {
        let _ = jobs.send(slot.clone());
    }
    let a = catch_unwind(AssertUnwindSafe(here));
    if let Some(job) = take(&slot) {
        job();
    }
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
        // The second half runs on the helper thread whenever it is free and
        // awake in time (other tests' joins may hold it: then it runs here).
        let on_helper = (0..1000).any(|_| {
            let (_, name) = join(
                // Long enough for the helper to wake and take its half.
                || std::thread::sleep(std::time::Duration::from_millis(1)),
                || std::thread::current().name().map(str::to_string),
            );
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
        let (started_tx, started_rx) = mpsc::channel();
        let (a, b) = join(
            // Returns once the helper has started its half (or after 5 s,
            // where another test's join holds the helper and the half runs here).
            || started_rx.recv_timeout(std::time::Duration::from_secs(5)).is_ok(),
            || {
                let _ = started_tx.send(());
                std::thread::sleep(slow);
                std::thread::current().name().map(str::to_string)
            },
        );
        assert!(began.elapsed() >= slow);
        if a {
            assert_eq!(b.as_deref(), Some("kl-fork"), "the helper's half, waited for");
        }
    }

    #[test]
    fn a_half_the_helper_has_not_started_runs_here() {
        // Keep the helper busy with a job of its own until released.
        let (release_tx, release_rx) = mpsc::channel::<()>();
        let (busy_tx, busy_rx) = mpsc::channel::<()>();
        let occupy: Job = Box::new(move || {
            let _ = busy_tx.send(());
            let _ = release_rx.recv_timeout(std::time::Duration::from_secs(30));
        });
        let h = helper().expect("the helper starts");
        h.jobs.lock().expect("jobs").send(Arc::new(Mutex::new(Some(occupy)))).expect("sent");
        busy_rx.recv_timeout(std::time::Duration::from_secs(30)).expect("the helper took its job");
        let here = std::thread::current().id();
        let (a, b) = join(|| 1, || (2, std::thread::current().id()));
        assert_eq!((a, b.0), (1, 2));
        assert_eq!(b.1, here, "the half the busy helper never started ran on the caller's thread");
        release_tx.send(()).expect("released");
        // The helper skips the slot that was taken back and serves the next join.
        assert_eq!(join(|| 3, || 4), (3, 4));
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
