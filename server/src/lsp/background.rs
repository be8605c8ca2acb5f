//! The server's own threads beside the async runtime. `BACKGROUND`, below
//! the editor's priority, for CPU work that nobody is waiting for: preparing a compilation after a pause
//! (parsing, signatures, bundles) and reading its results. On a runtime
//! worker that work took one of the runtime's two threads, and on a machine
//! with two cores it took a core from the analysis of the next keystroke
//! (#34: p99 of a kernel edit 31 -> 62 ms with the compiler on). Here it runs
//! under `SCHED_IDLE` (on a core nothing else wants; nice 19 where that is
//! refused), on its own thread, one job at a time, and a job whose caller
//! stopped waiting (a newer edit aborted it) is skipped. `ANALYSIS`, at the
//! editor's priority, for the analysis of each edit.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

/// A thread and its queue of jobs, started on the first job.
pub(crate) struct Lane {
    name: &'static str,
    /// The thread's nice value (0: the editor's own priority).
    nice: i32,
    /// Whether the thread runs only on an idle core (`SCHED_IDLE`): the
    /// preparation of a compilation on opening a large file (a parse and
    /// every kernel's signature, about 0.3 s of CPU for 5,000 lines) took a
    /// core from the first keystrokes' analyses even at nice 19.
    idle: bool,
    queue: OnceLock<Option<Mutex<mpsc::Sender<Job>>>>,
    /// Jobs submitted and not yet finished.
    pending: AtomicUsize,
}

/// Work nobody waits for: compilations' preparation, the embedded API.
pub(crate) static BACKGROUND: Lane = Lane::new("kl-background", 19, true);

/// The analyses of edits, one at a time at the editor's priority: off the
/// runtime's two workers, so that a hover or a completion never waits
/// behind an analysis for a worker (#36), and an analysis whose version a
/// newer edit replaced before its turn is skipped.
pub(crate) static ANALYSIS: Lane = Lane::new("kl-analysis", 0, false);

impl Lane {
    const fn new(name: &'static str, nice: i32, idle: bool) -> Lane {
        Lane { name, nice, idle, queue: OnceLock::new(), pending: AtomicUsize::new(0) }
    }

    fn queue(&self) -> Option<&Mutex<mpsc::Sender<Job>>> {
        self.queue
            .get_or_init(|| {
                let (tx, rx) = mpsc::channel::<Job>();
                let (nice, idle) = (self.nice, self.idle);
                let started = std::thread::Builder::new().name(self.name.into()).spawn(move || {
                    lower_this_thread(nice, idle);
                    for job in rx {
                        // A job that panics takes neither the thread nor the jobs after it.
                        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(job));
                    }
                });
                match started {
                    Ok(_) => Some(Mutex::new(tx)),
                    Err(e) => {
                        tracing::warn!("no {} thread ({e}): its work runs where it is asked for", self.name);
                        None
                    }
                }
            })
            .as_ref()
    }

    /// Queues `f` on this lane's thread (or runs it here, where no thread could start).
    pub(crate) fn submit(&'static self, f: impl FnOnce() + Send + 'static) {
        let Some(q) = self.queue() else { return f() };
        self.pending.fetch_add(1, Ordering::AcqRel);
        let pending = &self.pending;
        let job = Box::new(move || {
            // Counted off however the job ends.
            struct Done<'a>(&'a AtomicUsize);
            impl Drop for Done<'_> {
                fn drop(&mut self) {
                    self.0.fetch_sub(1, Ordering::AcqRel);
                }
            }
            let _done = Done(pending);
            f()
        });
        if let Err(mpsc::SendError(job)) = q.lock().unwrap_or_else(|p| p.into_inner()).send(job) {
            job();
        }
    }

    /// Whether no job is queued or running on this lane.
    pub(crate) fn is_idle(&self) -> bool {
        self.pending.load(Ordering::Acquire) == 0
    }

    /// Runs `f` on this lane's thread and returns its result; `None` when it
    /// panicked. A job whose caller stopped waiting (a newer edit aborted
    /// it) is skipped.
    pub(crate) async fn run<T: Send + 'static>(&'static self, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        self.submit(move || {
            if tx.is_closed() {
                return;
            }
            let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
        });
        match rx.await {
            Ok(Ok(value)) => Some(value),
            Ok(Err(_)) => {
                tracing::error!("a job on the {} thread panicked", self.name);
                None
            }
            Err(_) => None,
        }
    }
}

/// This thread at `nice` (0 leaves it as it is), and under `SCHED_IDLE` if
/// `idle`: on Linux both are per thread.
fn lower_this_thread(nice: i32, idle: bool) {
    if nice == 0 && !idle {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: gettid, setpriority and sched_setscheduler only read and set this thread's scheduling.
    unsafe {
        let tid = libc::gettid();
        if libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) != 0 {
            tracing::debug!("a lane's thread keeps its priority: {}", std::io::Error::last_os_error());
        }
        let param = libc::sched_param { sched_priority: 0 };
        if idle && libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) != 0 {
            tracing::debug!("a lane's thread stays at nice {nice}: {}", std::io::Error::last_os_error());
        }
    }
}

/// Runs `f` on the background thread (`SCHED_IDLE`, nice 19); see [`Lane::run`].
pub(crate) async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    BACKGROUND.run(f).await
}

/// When the user last opened or changed a document, so that work nobody waits for,
/// above all the Python processes it starts (the Triton names and API, the
/// compile worker: a version manager's shell shims and an interpreter's
/// start, about 0.3 s of CPU each), begins in a pause in typing, not beside
/// it. On two cores, even under `SCHED_IDLE`, they slowed the first
/// keystrokes after opening a file (p99 of kernel edits 3.1 -> 4.4 ms).
pub(crate) struct Quiet {
    began: std::time::Instant,
    /// Milliseconds after `began` of the last edit, plus one; 0: none yet.
    last_edit: std::sync::atomic::AtomicU64,
}

/// How long typing must have paused before background processes start.
pub(crate) const PAUSE: std::time::Duration = std::time::Duration::from_millis(400);

/// The editor's edits, as [`Quiet`] keeps them.
static EDITS: OnceLock<Quiet> = OnceLock::new();

pub(crate) fn edits() -> &'static Quiet {
    EDITS.get_or_init(Quiet::new)
}

impl Quiet {
    pub(crate) fn new() -> Quiet {
        Quiet { began: std::time::Instant::now(), last_edit: std::sync::atomic::AtomicU64::new(0) }
    }

    /// A document was just opened or changed.
    pub(crate) fn edited(&self) {
        let ms = self.began.elapsed().as_millis() as u64 + 1;
        self.last_edit.store(ms, std::sync::atomic::Ordering::Relaxed);
    }

    /// Resolves once no document has changed for `pause` (at once if none has
    /// changed in that time).
    pub(crate) async fn paused(&self, pause: std::time::Duration) {
        loop {
            let last = self.last_edit.load(std::sync::atomic::Ordering::Relaxed);
            if last == 0 {
                return;
            }
            let since =
                std::time::Duration::from_millis((self.began.elapsed().as_millis() as u64 + 1).saturating_sub(last));
            if since >= pause {
                return;
            }
            tokio::time::sleep(pause - since).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Background work waits for a pause in typing, and only while typing goes on.
    #[tokio::test]
    async fn background_work_waits_for_a_pause_in_typing() {
        let quiet = Quiet::new();
        let pause = std::time::Duration::from_millis(150);
        let at = std::time::Instant::now();
        quiet.paused(pause).await;
        assert!(at.elapsed() < pause, "no edit yet: no wait");
        // Edits every 50 ms for 300 ms: the pause begins after the last one.
        let typing = async {
            for _ in 0..6 {
                quiet.edited();
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        };
        let began = std::time::Instant::now();
        let ((), waited) = tokio::join!(typing, async {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            quiet.paused(pause).await;
            began.elapsed()
        });
        assert!(waited >= std::time::Duration::from_millis(250) + pause, "resolved after {waited:?}, while typing");
        let at = std::time::Instant::now();
        quiet.paused(pause).await;
        assert!(at.elapsed() < pause, "typing has paused: no wait");
    }

    #[tokio::test]
    async fn a_job_runs_off_the_calling_thread_and_returns_its_value() {
        let here = std::thread::current().id();
        let (value, there) = run(move || (6 * 7, std::thread::current().id())).await.expect("ran");
        assert_eq!(value, 42);
        assert_ne!(there, here);
    }

    #[tokio::test]
    async fn a_panicking_job_is_none_and_the_thread_lives_on() {
        assert_eq!(run(|| -> u32 { panic!("boom") }).await, None);
        assert_eq!(run(|| 1u32).await, Some(1));
    }

    #[tokio::test]
    async fn the_analysis_lane_runs_jobs_in_order_at_the_callers_priority() {
        let (tx, rx) = std::sync::mpsc::channel();
        for i in 0..5 {
            let tx = tx.clone();
            ANALYSIS.submit(move || tx.send(i).expect("send"));
        }
        let got: Vec<i32> = (0..5).map(|_| rx.recv_timeout(std::time::Duration::from_secs(5)).expect("ran")).collect();
        assert_eq!(got, [0, 1, 2, 3, 4]);
        ANALYSIS.submit(|| panic!("boom"));
        let (tx, rx) = std::sync::mpsc::channel();
        ANALYSIS.submit(move || tx.send(()).expect("send"));
        rx.recv_timeout(std::time::Duration::from_secs(5)).expect("the lane lives on after a panic");
        #[cfg(target_os = "linux")]
        {
            // SAFETY: getpriority reads this thread's nice value.
            let nice = ANALYSIS.run(|| unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) });
            let here = unsafe { libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t) };
            assert_eq!(nice.await, Some(here));
        }
    }

    #[tokio::test]
    async fn the_thread_runs_below_the_callers_priority() {
        #[cfg(target_os = "linux")]
        {
            // SAFETY: getpriority reads this thread's nice value.
            let nice = run(|| unsafe {
                *libc::__errno_location() = 0;
                libc::getpriority(libc::PRIO_PROCESS, libc::gettid() as libc::id_t)
            })
            .await
            .expect("ran");
            assert_eq!(nice, 19);
            // SAFETY: sched_getscheduler reads this thread's policy.
            let policy = run(|| unsafe { libc::sched_getscheduler(0) }).await.expect("ran");
            assert_eq!(policy, libc::SCHED_IDLE, "the background thread runs only on an idle core");
            let here = unsafe { libc::sched_getscheduler(0) };
            assert_ne!(here, libc::SCHED_IDLE);
        }
    }
}
