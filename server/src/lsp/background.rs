//! One thread below the editor's priority for the server's own CPU work
//! that nobody is waiting for: preparing a compilation after a pause
//! (parsing, signatures, bundles) and reading its results. On a runtime
//! worker that work took one of the runtime's two threads, and on a machine
//! with two cores it took a core from the analysis of the next keystroke
//! (#34: p99 of a kernel edit 31 -> 62 ms with the compiler on). Here it runs
//! at nice 19, on its own thread, one job at a time, and a job whose caller
//! stopped waiting (a newer edit aborted it) is skipped.

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};

type Job = Box<dyn FnOnce() + Send>;

fn queue() -> Option<&'static Mutex<mpsc::Sender<Job>>> {
    static QUEUE: OnceLock<Option<Mutex<mpsc::Sender<Job>>>> = OnceLock::new();
    QUEUE
        .get_or_init(|| {
            let (tx, rx) = mpsc::channel::<Job>();
            let started = std::thread::Builder::new().name("kl-background".into()).spawn(move || {
                lower_this_thread();
                for job in rx {
                    job();
                }
            });
            match started {
                Ok(_) => Some(Mutex::new(tx)),
                Err(e) => {
                    tracing::warn!("no background thread ({e}): its work runs on the runtime");
                    None
                }
            }
        })
        .as_ref()
}

/// This thread at the lowest priority: on Linux, nice is per thread.
fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    // SAFETY: gettid and setpriority only read and set this thread's scheduling value.
    unsafe {
        let tid = libc::gettid();
        if libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 19) != 0 {
            tracing::debug!("the background thread keeps its priority: {}", std::io::Error::last_os_error());
        }
    }
}

/// Runs `f` on the background thread and returns its result; `None` when it
/// panicked. Where no thread could be started, `f` runs here.
pub(crate) async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let Some(queue) = queue() else {
        return std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let job: Job = Box::new(move || {
        // The caller was dropped (its compilation cancelled by a newer edit): nothing to do.
        if tx.is_closed() {
            return;
        }
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    let sent = queue.lock().unwrap_or_else(|p| p.into_inner()).send(job);
    if sent.is_err() {
        return None;
    }
    match rx.await {
        Ok(Ok(value)) => Some(value),
        Ok(Err(_)) => {
            tracing::error!("a background job panicked");
            None
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        }
    }
}
