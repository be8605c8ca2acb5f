//! `--ray [ADDRESS]`: the pairs as Ray tasks, one GPU each (one CPU on the
//! interpreter), on an existing cluster or a local one started for the run.
//! The driver is `server/harness/ray_batch.py`, run with the user's Python;
//! each task hands its pair to `kernel-lsp bench --batch-serve` on its host
//! (`serve`), so the sandbox and the verdict are the per-host pool's. Ray does
//! the scheduling and the retries; nothing here schedules.

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;

use super::pool::{self, Worker, WorkerConfig};
use super::{BenchArgs, Job, Output};

/// The driver, embedded in the binary like the harness.
const DRIVER: &str = include_str!("../../../harness/ray_batch.py");

pub(crate) fn run(
    python: &str,
    address: Option<&str>,
    cpu: bool,
    workers: usize,
    jobs: &[Job],
    out: &mut Output,
) -> Result<(), String> {
    let dir = tempdir()?;
    let result = drive(&dir, python, address, cpu, workers, jobs, out);
    let _ = std::fs::remove_dir_all(&dir);
    result
}

fn drive(
    dir: &Path,
    python: &str,
    address: Option<&str>,
    cpu: bool,
    workers: usize,
    jobs: &[Job],
    out: &mut Output,
) -> Result<(), String> {
    let driver = dir.join("ray_batch.py");
    std::fs::write(&driver, DRIVER).map_err(|e| e.to_string())?;
    let jobs_file = dir.join("jobs.jsonl");
    let text: Vec<String> = jobs.iter().filter_map(|j| serde_json::to_string(j).ok()).collect();
    std::fs::write(&jobs_file, text.join("\n") + "\n").map_err(|e| e.to_string())?;
    let exe = std::env::current_exe().map_err(|e| format!("cannot find the kernel-lsp binary: {e}"))?;
    let mut cmd = Command::new(python);
    cmd.arg(&driver).arg("--jobs").arg(&jobs_file).arg("--kernel-lsp").arg(&exe).args(["--python", python]);
    if let Some(a) = address {
        cmd.args(["--address", a]);
    }
    if cpu {
        cmd.arg("--cpu");
        if address.is_none() {
            cmd.args(["--cpus", &workers.to_string()]);
        }
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("cannot start the Ray driver with {python}: {e}"))?;
    let stdout = child.stdout.take().ok_or("the Ray driver has no stdout")?;
    let mut got = 0;
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.map_err(|e| e.to_string())?;
        let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
        if v["type"] == "error" {
            let _ = child.wait();
            return Err(v["message"].as_str().unwrap_or("the Ray driver failed").to_string());
        }
        if v.get("pair").is_some() {
            out.write_line(v)?;
            got += 1;
        }
    }
    let status = child.wait().map_err(|e| e.to_string())?;
    if got < jobs.len() {
        return Err(format!("the Ray driver ended ({status}) after {got} of {} verdicts", jobs.len()));
    }
    Ok(())
}

fn tempdir() -> Result<std::path::PathBuf, String> {
    let dir = std::env::temp_dir().join(format!("kernel-lsp-ray-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    Ok(dir)
}

/// `bench --batch-serve`: one job per line on stdin, its batch line on stdout,
/// through one sandboxed worker on the GPU this process was given.
pub(crate) fn serve(args: &BenchArgs) -> i32 {
    let at = std::env::current_dir().unwrap_or_default();
    let run = || -> Result<(), String> {
        let settings = super::settings_for(args, &at)?;
        let probe = super::BenchRequest {
            python: args.python.clone(),
            settings: settings.clone(),
            candidate: at.join("x.py"),
            ..Default::default()
        };
        let python = super::super::resolve_python(&probe);
        let sandbox = super::prepare_sandbox(&settings, &python)?;
        let harness = super::super::write_harness().map_err(|e| e.to_string())?;
        let cfg = WorkerConfig { reads: vec![harness.clone()], harness, cpu: args.cpu, sandbox, threads: None };
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
        let gpu = std::env::var("CUDA_VISIBLE_DEVICES").ok();
        let judge = async |worker: &mut Worker, cfg: &WorkerConfig, request: &Value| {
            answer(worker, cfg, request, gpu.as_deref()).await
        };
        let served = match &args.serve_socket {
            Some(path) => {
                let idle = std::time::Duration::from_secs(args.serve_idle);
                runtime.block_on(pool::serve_socket(&cfg, path, idle, judge))
            }
            None => runtime.block_on(pool::serve_lines(&cfg, judge)),
        };
        served.map_err(|e| e.to_string())
    };
    match run() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("error: {e}");
            2
        }
    }
}

async fn answer(worker: &mut Worker, cfg: &WorkerConfig, request: &Value, gpu: Option<&str>) -> Value {
    let job: Job = match serde_json::from_value(request.clone()) {
        Ok(j) => j,
        Err(e) => return serde_json::json!({"type": "error", "message": format!("bad job: {e}")}),
    };
    let result = super::judge(worker, cfg, &job).await;
    let mut line = serde_json::to_value(&result).unwrap_or_default();
    line["pair"] = serde_json::json!({
        "id": job.id, "candidate": job.candidate, "reference": job.reference, "hash": job.hash, "gpu": gpu,
        "server_pid": std::process::id(), "worker_starts": worker.starts,
    });
    line
}
