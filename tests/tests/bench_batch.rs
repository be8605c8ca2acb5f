//! `kernel-lsp bench --batch` end to end on the CPU interpreter: the real
//! binary, sandboxed workers, real Triton kernels (`tests/fixtures/batch/`:
//! a correct candidate, a slow correct one, a wrong one, a cheat whose kernel
//! never runs, one that does not parse, one that kills its worker).
//!
//! Needs a Python with torch and triton: `KERNEL_LSP_TEST_PYTHON`, else
//! `<repo>/.venv/bin/python`. The Ray test needs `ray` in that Python.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python() -> String {
    std::env::var("KERNEL_LSP_TEST_PYTHON").unwrap_or_else(|_| repo().join(".venv/bin/python").display().to_string())
}

/// Whether bwrap can start a sandbox here; otherwise the project says `llm.sandbox = "none"`.
fn bwrap_works() -> bool {
    Command::new("bwrap")
        .args([
            "--unshare-user",
            "--unshare-pid",
            "--unshare-net",
            "--ro-bind",
            "/",
            "/",
            "--proc",
            "/proc",
            "--dev",
            "/dev",
            "true",
        ])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A fresh folder holding copies of `fixtures` from tests/fixtures/batch.
fn project(name: &str, fixtures: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-lsp-batch-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let config = if bwrap_works() { "" } else { "[llm]\nsandbox = \"none\"\n" };
    std::fs::write(dir.join("kernel-lsp.toml"), config).unwrap();
    for f in fixtures {
        std::fs::copy(repo().join("tests/fixtures/batch").join(f), dir.join(f)).unwrap();
    }
    dir
}

const ALL: &[&str] =
    &["reference.py", "good_new.py", "slow_new.py", "wrong_new.py", "cheat_new.py", "syntax_new.py", "crash_new.py"];

fn batch_command(dir: &Path, extra: &[&str]) -> Command {
    let mut cmd = Command::new(common::server_binary());
    cmd.args(["bench", "--batch", ".", "--python", &python(), "--format", "json"]).args(extra).current_dir(dir);
    if !extra.contains(&"--timeout") {
        cmd.args(["--timeout", "120"]);
    }
    cmd
}

fn results(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("kernel-lsp-results.jsonl")).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).expect("each line is JSON")).collect()
}

fn by_id(lines: &[Value]) -> BTreeMap<String, Value> {
    lines.iter().map(|l| (l["pair"]["id"].as_str().unwrap().to_string(), l.clone())).collect()
}

fn kind(line: &Value) -> &str {
    line["error"]["kind"].as_str().unwrap_or("<none>")
}

/// Processes under `root` (by parent links) whose command line has all of `words`.
fn descendants_with(root: u32, words: &[&str]) -> Vec<u32> {
    let parent = |pid: u32| -> Option<u32> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
    };
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else { continue };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if !words.iter().all(|w| cmdline.contains(w)) {
            continue;
        }
        let mut p = pid;
        while let Some(pp) = parent(p).filter(|pp| *pp > 1) {
            if pp == root {
                found.push(pid);
                break;
            }
            p = pp;
        }
    }
    found
}

#[test]
fn every_pair_is_judged_once_though_a_worker_is_killed_mid_batch_and_a_rerun_resumes() {
    let dir = project("kill", ALL);
    let mut child = batch_command(&dir, &["--workers", "2"]).stdout(Stdio::piped()).spawn().unwrap();
    // Kill a warm worker (the harness's `serve` process) once the first verdict is out.
    let deadline = Instant::now() + Duration::from_secs(300);
    let mut killed = None;
    while killed.is_none() && Instant::now() < deadline && child.try_wait().unwrap().is_none() {
        if !results(&dir).is_empty() {
            if let Some(pid) = descendants_with(child.id(), &["harness-", "serve"]).first() {
                // SAFETY: kill has no memory-safety preconditions; the pid is this test's grandchild.
                unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
                killed = Some(*pid);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    let summary: Value = serde_json::from_slice(&out.stdout).expect("the summary is JSON");
    assert!(killed.is_some(), "no worker was running to kill; summary: {summary}");
    let lines = results(&dir);
    let ids: Vec<&str> = lines.iter().map(|l| l["pair"]["id"].as_str().unwrap()).collect();
    assert_eq!(lines.len(), 6, "one line per pair: {ids:?}");
    let got = by_id(&lines);
    assert_eq!(got.len(), 6, "no pair twice: {ids:?}");
    for ok in ["good_new.py", "slow_new.py"] {
        assert_eq!(got[ok]["correct"], true, "{ok}: {}", got[ok]);
        assert!(got[ok]["error"].is_null(), "{ok}: {}", got[ok]);
        assert_eq!(got[ok]["mode"], "cpu-interpreter");
    }
    assert_eq!((got["wrong_new.py"]["correct"].clone(), kind(&got["wrong_new.py"])), (Value::Bool(false), "mismatch"));
    assert_eq!(kind(&got["cheat_new.py"]), "kernel-never-launched");
    assert_eq!(got["syntax_new.py"]["static_check"], "syntax", "rejected before any worker: {}", got["syntax_new.py"]);
    let crash = &got["crash_new.py"];
    assert_eq!(kind(crash), "harness");
    assert!(crash["error"]["message"].as_str().unwrap().contains("killed its worker twice"), "{crash}");
    assert_eq!(summary["pairs"], 6);
    assert_eq!(summary["correct"], 3, "good, slow, and the cheat's matching output: {summary}");
    assert_eq!(summary["flagged"], 1, "{summary}");
    assert_eq!(summary["compiled"], 4, "all but the syntax error and the crash: {summary}");
    assert_eq!(summary["fast_p"]["0"], 0.5);
    assert!(summary["fast_p"]["1"].is_null(), "no timing on the interpreter: {summary}");

    // The same verdicts as a single `bench` of each (the crasher kills whatever forked it).
    for name in ["good_new.py", "wrong_new.py", "cheat_new.py", "syntax_new.py"] {
        let single = Command::new(common::server_binary())
            .args(["bench", name, "--cpu", "--format", "json", "--timeout", "120", "--python", &python()])
            .current_dir(&dir)
            .output()
            .unwrap();
        let single: Value = serde_json::from_slice(&single.stdout).expect("bench prints JSON");
        assert_eq!(single["correct"], got[name]["correct"], "{name}");
        assert_eq!(kind(&single), kind(&got[name]), "{name}");
    }

    // A rerun judges nothing again; a changed file is judged anew.
    let start = Instant::now();
    let again = batch_command(&dir, &["--workers", "2"]).output().unwrap();
    let summary: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("6 already judged"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(results(&dir).len(), 6, "nothing appended");
    assert_eq!(summary["correct"], 3);
    assert!(start.elapsed() < Duration::from_secs(30), "no worker started: {:?}", start.elapsed());
    let wrong = std::fs::read_to_string(dir.join("wrong_new.py")).unwrap();
    std::fs::write(dir.join("wrong_new.py"), wrong.replace("self.scale, 2.0,", "self.scale, 1.0,")).unwrap();
    let third = batch_command(&dir, &["--workers", "1"]).output().unwrap();
    let summary: Value = serde_json::from_slice(&third.stdout).unwrap();
    let lines = results(&dir);
    assert_eq!(lines.len(), 7, "only the changed pair ran");
    assert_eq!(lines[6]["pair"]["id"], "wrong_new.py");
    assert_eq!(lines[6]["correct"], true);
    assert_eq!(summary["pairs"], 6, "the summary is of the current pairs");
    assert_eq!(summary["correct"], 4, "{summary}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_candidate_that_hangs_is_judged_timeout_and_its_worker_replaced() {
    let dir = project("hang", &["reference.py", "hang_new.py", "good_new.py"]);
    // One worker, the hanging pair first (pairs run in name order): the good one needs the fresh worker.
    std::fs::rename(dir.join("hang_new.py"), dir.join("a_hang_new.py")).unwrap();
    let out = batch_command(&dir, &["--workers", "1", "--timeout", "20"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let got = by_id(&results(&dir));
    assert_eq!(got.len(), 2, "{stderr}");
    assert_eq!(kind(&got["a_hang_new.py"]), "timeout", "{}", got["a_hang_new.py"]);
    assert_eq!(got["good_new.py"]["correct"], true, "{}", got["good_new.py"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ray_in_local_mode_judges_pairs_as_the_pool_does() {
    let has_ray = Command::new(python()).args(["-c", "import ray"]).status().is_ok_and(|s| s.success());
    if !has_ray {
        eprintln!("SKIPPED: {} cannot import ray", python());
        return;
    }
    let dir = project("ray", &["reference.py", "good_new.py", "wrong_new.py", "slow_new.py"]);
    let out = batch_command(&dir, &["--ray", "--cpu", "--workers", "2"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {stderr}"));
    assert!(stderr.contains("Ray tasks on a local cluster"), "{stderr}");
    let got = by_id(&results(&dir));
    assert_eq!(got.len(), 3, "{stderr}");
    assert_eq!(got["good_new.py"]["correct"], true, "{}", got["good_new.py"]);
    assert_eq!(got["slow_new.py"]["correct"], true, "{}", got["slow_new.py"]);
    assert_eq!(kind(&got["wrong_new.py"]), "mismatch");
    assert!(got["good_new.py"]["pair"]["ray_node"].is_string(), "ran as a Ray task: {}", got["good_new.py"]);
    assert_eq!(summary["correct"], 2);
    // Each task reached its host's warm server over its socket: a server that judged
    // several pairs started its sandboxed worker once.
    let mut servers = BTreeMap::<u64, usize>::new();
    for line in got.values() {
        let pid = line["pair"]["server_pid"].as_u64().unwrap_or_else(|| panic!("served: {line}"));
        *servers.entry(pid).or_default() += 1;
        assert_eq!(line["pair"]["worker_starts"], 1, "{line}");
    }
    // The run's end removed the sockets' folder: its servers are gone.
    std::thread::sleep(Duration::from_secs(3));
    for pid in servers.keys() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(stat.is_empty() || stat.split(' ').nth(2) == Some("Z"), "server {pid} still runs: {stat}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_candidate_the_compiler_refuses_is_judged_before_any_worker_runs_it() {
    // The CPU interpreter would run `break` as Python and call the candidate correct; the
    // user's Triton compiles it first (no GPU needed) and that is its verdict.
    let dir = project("compile", &["reference.py", "good_new.py", "break_new.py"]);
    let out = batch_command(&dir, &["--cpu"]).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let lines = by_id(&results(&dir));
    assert_eq!(lines.len(), 2, "{lines:#?}");
    let broken = lines.iter().find(|(id, _)| id.contains("break_new")).map(|(_, l)| l).expect("break_new judged");
    assert_eq!(broken["error"]["kind"], "compile-error", "{broken:#}");
    assert_eq!(broken["static_check"], "compile", "{broken:#}");
    assert_eq!(broken["error"]["line"], 13, "{broken:#}");
    assert!(broken["error"]["message"].as_str().unwrap().contains("Break"), "{broken:#}");
    let good = lines.iter().find(|(id, _)| id.contains("good_new")).map(|(_, l)| l).expect("good_new judged");
    assert_eq!(good["correct"], true, "{good:#}");
}
