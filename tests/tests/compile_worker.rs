//! The compile worker pool in process (`kernel_lsp::compile::Compiler`) with
//! real Triton on the CPU: a worker killed from outside is started again and
//! answers; a compilation cancelled midway (a newer edit) leaves the worker
//! answering the next request with its own reply, not the stale one.
//!
//! Needs a Python with triton: `KERNEL_LSP_TEST_PYTHON`, else the repo's `.venv`.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use kernel_lsp::compile::{self, Compiler, Job};
use kernel_lsp::config::Settings;

fn python() -> String {
    std::env::var("KERNEL_LSP_TEST_PYTHON")
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python").display().to_string())
}

/// The jobs of a one-kernel file named `name` launched with `BLOCK=block`, without the disk cache.
fn jobs(name: &str, block: u32) -> Vec<Job> {
    let src = format!(
        r#"import torch
import triton
import triton.language as tl

@triton.jit
def {name}(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

def run():
    x = torch.zeros(4096, device="cuda")
    {name}[(1,)](x, x.numel(), BLOCK={block})
"#
    );
    let tree = kernel_lsp::parse_forest(&src);
    let mut jobs = compile::jobs(Path::new("/nowhere/k.py"), &src, &tree, &Settings::default());
    for j in &mut jobs {
        j.cache_dir = None;
    }
    jobs
}

fn compiler() -> Arc<Compiler> {
    let settings = Settings { python: Some(python()), ..Settings::default() };
    Arc::new(Compiler::new(&python(), &settings, 1).expect("the worker's sandbox"))
}

fn compiled_name(o: &compile::Outcome) -> String {
    let reply = o.reply.as_ref().expect("a reply");
    assert_eq!(reply["status"], "compiled", "{reply:#}");
    reply["resources"]["name"].as_str().unwrap_or("").to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_worker_is_started_again() {
    let c = compiler();
    let first = c.run(jobs("first_kernel", 64)).await.unwrap();
    assert_eq!(compiled_name(&first[0]), "first_kernel");
    let pids = c.pids().await;
    assert_eq!(pids.len(), 1);
    // SAFETY: a plain kill of the process this test started.
    assert_eq!(unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) }, 0);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let second = c.run(jobs("second_kernel", 128)).await.unwrap();
    assert_eq!(compiled_name(&second[0]), "second_kernel");
    assert_eq!(c.starts().await, 2, "started once more after the kill");
    assert_ne!(c.pids().await, pids);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_compile_leaves_the_worker_answering_the_next_request() {
    let c = compiler();
    c.hello().await.unwrap();
    let stale = {
        let c = Arc::clone(&c);
        tokio::spawn(async move { c.run(jobs("stale_kernel", 256)).await })
    };
    // The worker is busy compiling when the task is dropped, as a newer edit drops it.
    tokio::time::sleep(Duration::from_millis(150)).await;
    stale.abort();
    // On a fast machine the compilation may have finished first; either way the next reply must be its own.
    if let Err(e) = stale.await {
        assert!(e.is_cancelled(), "{e}");
    }
    let fresh = c.run(jobs("fresh_kernel", 32)).await.unwrap();
    assert_eq!(compiled_name(&fresh[0]), "fresh_kernel", "the stale reply was not taken for this one");
    assert_eq!(c.starts().await, 1, "no restart was needed");
}
