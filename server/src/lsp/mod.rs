//! The language server: `kernel-lsp serve` speaks LSP on stdin/stdout
//! (tower-lsp-server on a tokio runtime).
//!
//! - `server`: the `LanguageServer` handlers; which ones mutate state and run
//!   in order, which ones read, and where slow work goes.
//! - `state`: open documents, settings, client capabilities, benchmark results.
//! - `document`: a document's text, tree-sitter tree, last analysis and analysis snapshot; the
//!   incremental edit path.
//! - `convert`: byte ranges <-> LSP positions in the negotiated encoding; our
//!   diagnostics -> LSP diagnostics with their fix in `data`.
//! - `actions`, `lens`, `hover`, `history`, `bench_view`, `settings`,
//!   `rewrite` (LLM rewrites: `kernel-lsp.rewrite`): one feature each.
//!
//! Logs go to stderr through `tracing` (`KERNEL_LSP_LOG` sets the filter):
//! stdout is the protocol.

use std::sync::atomic::{AtomicBool, Ordering};

use tower_lsp_server::{LspService, Server as Transport};

mod actions;
mod background;
mod bench_view;
mod compile;
mod complete;
mod convert;
mod document;
mod framing;
mod history;
mod hover;
mod hover_api;
mod lens;
mod navigation;
mod outline;
mod rewrite;
mod semantic;
mod server;
mod settings;
mod signature;
mod state;
mod triton_api_load;

pub use bench_view::BENCH_CODES;
pub use server::{Server, COMMANDS};

/// Set by `shutdown`; `exit` without it ends the process with code 1, as the protocol asks.
static SHUTDOWN_REQUESTED: AtomicBool = AtomicBool::new(false);

/// glibc gives each thread that allocates its own malloc arena (up to 8 per
/// core), and memory freed in one arena is not reused by another: with the
/// runtime's threads, the analysis thread and the output thread each holding
/// freed trees and models, that cost ~5 MB of peak RSS with 20 open files. The server's threads
/// hardly allocate concurrently, so one arena costs no measurable time.
/// Where the binary links jemalloc (`main.rs`, one arena there for the same
/// reason), tree-sitter's C allocations go there too
/// (`model::tree_sitter_on_jemalloc`), and glibc's malloc serves only what
/// other C code asks of it.
/// Called before the runtime starts its threads.
fn one_malloc_arena() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` only sets an allocator parameter; M_ARENA_MAX is a valid one.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 1);
    }
}

/// How often the client process is looked for: an editor that died is noticed
/// within this, and the check is one syscall.
const CLIENT_POLL: std::time::Duration = std::time::Duration::from_secs(3);

/// Whether the process `pid` still exists. `kill(pid, 0)` sends nothing; EPERM
/// means it exists but belongs to someone else.
fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    if unsafe { libc::kill(pid, 0) } == 0 {
        return true;
    }
    std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Resolves once the client process `pid` is gone; never when there is none to watch.
async fn client_gone(pid: Option<u32>) {
    let Some(pid) = pid else { return std::future::pending().await };
    let mut tick = tokio::time::interval(CLIENT_POLL);
    loop {
        tick.tick().await;
        if !process_alive(pid) {
            return;
        }
    }
}

/// Serves LSP on stdin/stdout until `exit`, stdin closing, or the client
/// process `client_pid` (from `--clientProcessId`) being gone; returns the
/// process exit code.
pub fn serve_stdio(client_pid: Option<u32>) -> i32 {
    let filter = tracing_subscriber::EnvFilter::try_from_env("KERNEL_LSP_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("kernel_lsp=info,warn"));
    let _ = tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false).with_env_filter(filter).try_init();
    one_malloc_arena();
    // One thread serves the protocol, its event loop included: a message
    // from the client wakes it, and no runtime worker stands between it and
    // the analysis thread (lsp_latency, docs/performance.md). The analyses
    // run on their own threads (`background`), off this one.
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("kernel-lsp serve: cannot start the async runtime: {e}");
            return 2;
        }
    };
    runtime.block_on(async {
        crate::bench::sandbox::exit_cleanly_on_signals();
        let (frames, transport_out, out) = framing::output();
        // 1 MiB: a 5,000-line file's diagnostics (about 100 KB) fit at once.
        framing::widen_pipe(1, 1 << 20);
        framing::widen_pipe(0, 1 << 20);
        let writer = std::thread::Builder::new()
            .name("kl-stdout".into())
            .spawn(move || framing::write_frames(out, framing::RawStdout::new()));
        if let Err(e) = &writer {
            eprintln!("kernel-lsp serve: cannot start the output thread: {e}");
            return;
        }
        let server_frames = frames.clone();
        let (service, socket) = LspService::build(move |client| Server::with_frames(client, server_frames))
            .custom_method("window/workDoneProgress/cancel", Server::work_done_progress_cancel)
            .custom_method(framing::INVALID_MESSAGE, Server::invalid_message)
            .finish();
        // 1 MiB: a whole-text change of a large file (140 KB at 5,000 lines) passes in one go.
        let (input, sanitized) = tokio::io::duplex(1 << 20);
        let (input_done, input_ended) = tokio::sync::oneshot::channel::<()>();
        // The input is read in this task, beside the transport it feeds: a
        // frame read from stdin wakes the thread that handles it, not a
        // runtime worker that then wakes this one.
        let read_input = async move {
            match framing::watched_stdin() {
                Some(stdin) => framing::sanitize(stdin, input).await,
                None => framing::sanitize(tokio::io::stdin(), input).await,
            }
            let _ = input_done.send(());
            std::future::pending::<()>().await
        };
        let serve = Transport::new(sanitized, transport_out, socket).concurrency_level(32).serve(service);
        // Once the client has gone (`exit`, or stdin closed), handlers still
        // waiting on it get a moment to finish, not forever.
        let grace = async {
            let _ = input_ended.await;
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        };
        tokio::select! {
            _ = serve => {}
            _ = read_input => {}
            _ = grace => tracing::warn!("stopping with requests still waiting on the client"),
            _ = client_gone(client_pid) => {
                tracing::warn!("client process {} is gone: stopping", client_pid.unwrap_or_default());
            }
        }
        // Everything queued (the `shutdown` response among it) reaches stdout before we exit.
        framing::flushed(&frames, std::time::Duration::from_secs(1)).await;
    });
    // Benchmark tasks still running would otherwise keep the runtime (and their harness) alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(500));
    if SHUTDOWN_REQUESTED.load(Ordering::SeqCst) {
        0
    } else {
        1
    }
}
