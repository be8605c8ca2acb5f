//! The rewrite gate's hygiene checks and the sandbox, end to end: the real
//! binary against the loopback chat-completions server (`llm_mock`) replaying
//! recorded answers from `tests/fixtures/llm/`, on `examples/gru/` run small
//! on Triton's CPU interpreter; and the real bubblewrap.
//!
//! Needs a Python with torch and triton: `KERNEL_LSP_TEST_PYTHON`, else
//! `<repo>/.venv/bin/python`.

#[allow(dead_code)]
mod llm_mock;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kernel_lsp::config::SandboxSetting;
use kernel_lsp::llm::sandbox;
use llm_mock::{binary, fixture, python, repo, MockLlm, Reply};
use serde_json::Value;

const FILE: &str = "gru_python_loop.py";
const SMALL: [(&str, &str); 5] =
    [("seq_len", "4"), ("batch_size", "2"), ("input_size", "16"), ("hidden_size", "16"), ("num_layers", "2")];

fn project(name: &str, llm: &MockLlm, extra_llm_config: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-lsp-gate-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let config = format!(
        "[llm]\nbase-url = \"{}\"\nmodel = \"test-model\"\nmax-tokens = 8000\n{extra_llm_config}",
        llm.base_url
    );
    std::fs::write(dir.join("kernel-lsp.toml"), config).expect("config");
    for f in [FILE, "reference.py"] {
        std::fs::copy(repo().join("examples/gru").join(f), dir.join(f)).expect("example copies");
    }
    dir
}

fn rewrite(dir: &Path, repairs: &str) -> Output {
    let py = python();
    let mut argv = vec!["rewrite", FILE, "--cpu", "--python", py.as_str(), "--bench-timeout", "120"];
    let sets: Vec<String> = SMALL.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for s in &sets {
        argv.extend(["--set", s.as_str()]);
    }
    argv.extend(["--action", "persistent", "--candidates", "1", "--repairs", repairs, "--format", "json"]);
    Command::new(binary()).args(&argv).current_dir(dir).output().expect("kernel-lsp runs")
}

fn json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("stdout is not JSON ({e}):\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr))
    })
}

fn sandbox_row(o: &Value) -> Value {
    o["timeline"].as_array().and_then(|t| t.iter().find(|r| r["stage"] == "sandbox").cloned()).unwrap_or_default()
}

/// bwrap works here, or the test says loudly that it did not run its sandboxed half.
fn bwrap_or_loud_skip(test: &str) -> bool {
    match sandbox::bwrap_works() {
        Ok(()) => true,
        Err(e) => {
            eprintln!("\n!!!!! {test}: SKIPPED, bubblewrap cannot start a sandbox here: {e} !!!!!\n");
            false
        }
    }
}

#[test]
fn an_answer_that_falls_back_to_pytorch_is_refused_and_the_reason_goes_back() {
    let llm = MockLlm::start(vec![
        Reply::Answer(fixture("answer_fallback.md")),
        Reply::Answer(fixture("answer_persistent.md")),
    ]);
    if !bwrap_or_loud_skip("an_answer_that_falls_back_to_pytorch_is_refused_and_the_reason_goes_back") {
        return;
    }
    let dir = project("fallback", &llm, "");
    let out = rewrite(&dir, "1");
    let o = json(&out);
    assert_eq!(out.status.code(), Some(0), "{o:#}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "one answer, one repair");
    let repair = requests[1].last_message();
    assert!(repair.contains("rejected by the static checker"), "{repair}");
    assert!(
        repair.contains("KL101 pytorch-fallback") && repair.contains("computes the result with PyTorch"),
        "{repair}"
    );
    assert!(repair.contains("KL102 torch-computes-the-task"), "the fallback returns the GRU's output: {repair}");
    let gate = o["timeline"].as_array().unwrap().iter().find(|r| r["stage"] == "gate").cloned().unwrap();
    assert_eq!(gate["score"], "rejected", "{gate:#}");
    assert_eq!(o["winner"], 1, "the repaired answer wins: {o:#}");
    // Which sandbox ran is said in the output (without a working bwrap the rewrite does not run at all).
    let row = sandbox_row(&o);
    assert_eq!(row["score"], "bwrap", "{row:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An answer no static rule refuses (the gate does not refuse KL106) that
/// rounds the input through fp16: the run sees the cast, the candidate is
/// refused as a precision downgrade, and that reason goes back for the repair.
#[test]
fn an_answer_that_drops_precision_is_refused_by_what_the_run_saw() {
    let honest = fixture("answer_persistent.md");
    let cheat = honest.replace("x = x.contiguous().float()", "x = x.contiguous().half().float()");
    assert_ne!(cheat, honest, "the fixture's forward changed: update the substitution");
    let llm = MockLlm::start(vec![Reply::Answer(cheat), Reply::Answer(honest)]);
    if !bwrap_or_loud_skip("an_answer_that_drops_precision_is_refused_by_what_the_run_saw") {
        return;
    }
    let dir = project("precision", &llm, "");
    let out = rewrite(&dir, "1");
    let o = json(&out);
    assert_eq!(out.status.code(), Some(0), "{o:#}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "one answer, one repair: {o:#}");
    let repair = requests[1].last_message();
    assert!(repair.contains("the run saw work that makes a speedup not count"), "{repair}");
    assert!(repair.contains("float16") && repair.contains("aten._to_copy"), "{repair}");
    assert_eq!(o["winner"], 1, "the repaired answer wins: {o:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_answer_that_runs_a_command_is_refused_before_anything_runs() {
    let dir0 = std::env::temp_dir().join(format!("kernel-lsp-gate-marker-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir0);
    std::fs::create_dir_all(&dir0).unwrap();
    let marker = dir0.join("touched");
    let answer = fixture("answer_runs_a_command.md").replace("{MARKER}", &marker.display().to_string());
    let llm = MockLlm::start(vec![Reply::Answer(answer)]);
    // No sandbox: the gate alone must keep the command from running.
    let dir = project("command", &llm, "sandbox = \"none\"\n");
    let out = rewrite(&dir, "0");
    let o = json(&out);
    assert!(!marker.exists(), "the answer's command ran: {o:#}");
    assert_eq!(o["candidates"][0]["status"], "rejected", "{o:#}");
    let problem = o["candidates"][0]["problem"].as_str().unwrap_or_default();
    assert!(problem.contains("runs a command (`os.system`)"), "{problem}");
    assert_eq!(sandbox_row(&o)["score"], "none");
    assert!(sandbox_row(&o)["problem"].as_str().unwrap_or_default().contains("with your rights"));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir0);
}

/// A write the static gate does not know (`tensor.numpy().tofile(path)`; it
/// refuses `torch.save` and `open(..., "w")`) passes the gate; under bwrap the
/// write fails (read-only) and the project holds exactly what it held.
#[test]
fn under_bwrap_an_answer_cannot_write_into_the_project() {
    if !bwrap_or_loud_skip("under_bwrap_an_answer_cannot_write_into_the_project") {
        return;
    }
    let llm = MockLlm::start(vec![Reply::Answer(String::new())]);
    let dir = project("write", &llm, "sandbox = \"bwrap\"\n");
    let leak = dir.join("leak.pt");
    let answer = fixture("answer_writes_a_file.md").replace("{LEAK}", &leak.display().to_string());
    drop(llm);
    let llm = MockLlm::start(vec![Reply::Answer(answer)]);
    std::fs::write(
        dir.join("kernel-lsp.toml"),
        format!("[llm]\nbase-url = \"{}\"\nmodel = \"test-model\"\nsandbox = \"bwrap\"\n", llm.base_url),
    )
    .unwrap();
    let out = rewrite(&dir, "0");
    let o = json(&out);
    assert!(!leak.exists(), "the answer wrote into the project from inside the sandbox: {o:#}");
    assert_eq!(sandbox_row(&o)["score"], "bwrap", "{o:#}");
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.file_name().to_string_lossy().to_string()).collect();
    names.sort();
    assert_eq!(names, [".kernel-lsp", FILE, "kernel-lsp.toml", "reference.py"], "{o:#}");
    assert_eq!(o["candidates"][0]["status"], "failed", "{o:#}");
    let problem = o["candidates"][0]["problem"].as_str().unwrap_or_default();
    assert!(problem.contains("Read-only file system"), "{problem}");
    // What the harness saw as a file in the sandbox is reported as the user's file.
    let kernels = o["baseline"]["kernels"].as_array().cloned().unwrap_or_default();
    assert!(!kernels.is_empty() && kernels.iter().all(|k| k["file"] == dir.join(FILE).display().to_string()), "{o:#}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The sandbox itself, with a probe script: outside it (`none`) the probe
/// writes into the project and reaches a loopback listener; inside it neither,
/// and in both the environment is the allow list (no key, no credential).
#[test]
fn the_sandbox_allows_writes_only_to_its_directory_and_no_network() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let project = std::env::temp_dir().join(format!("kernel-lsp-sandbox-probe-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&project);
    std::fs::create_dir_all(&project).unwrap();
    let probe = |sb: &sandbox::Sandbox| -> String {
        let script = format!(
            r#"
import os, socket
print("env", os.environ.get("KLSP_PROBE_API_KEY"), os.environ.get("KLSP_NAMED_VAR"), sorted(os.environ)[:3])
def attempt(f):
    try:
        f(); return "ok"
    except OSError as e:
        return type(e).__name__ + ": " + str(e)
def write(path):
    with open(path, "w") as f: f.write("x")
print("project", attempt(lambda: write("{p}/written")))
print("scratch", attempt(lambda: write(os.environ["TMPDIR"] + "/written")))
print("candidates", attempt(lambda: write("{s}/work/planted.py")))
print("home", os.environ["HOME"] == os.environ["TMPDIR"], os.environ.get("PYTHONNOUSERSITE"))
print("network", attempt(lambda: socket.create_connection(("127.0.0.1", {port}), timeout=2)))
print("pids", sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
print("tmpdir", os.environ["TMPDIR"])
"#,
            p = project.display(),
            s = sb.dir().display(),
        );
        std::env::set_var("KLSP_PROBE_API_KEY", "sk-probe");
        std::env::set_var("KLSP_NAMED_VAR", "named");
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let out = runtime
            .block_on(async { sb.command(&["-c".to_string(), script], &[]).output().await })
            .expect("probe runs");
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
    };
    let limits = sandbox::Limits::default();
    let outside = probe(&sandbox::prepare(Some(SandboxSetting::None), "python3", limits).unwrap());
    assert!(outside.contains("project ok") && outside.contains("network ok"), "{outside}");
    assert!(outside.contains("env None None"), "the allow list holds without bwrap too: {outside}");
    let _ = std::fs::remove_file(project.join("written"));
    if !bwrap_or_loud_skip("the_sandbox_allows_writes_only_to_its_directory_and_no_network") {
        return;
    }
    let sb = sandbox::prepare(Some(SandboxSetting::Bwrap), "python3", limits).unwrap();
    let inside = probe(&sb);
    assert!(
        inside.contains("project OSError: [Errno 30] Read-only file system")
            || inside.contains("project FileNotFoundError"),
        "{inside}"
    );
    assert!(inside.contains("scratch ok"), "{inside}");
    assert!(
        inside.contains("candidates OSError: [Errno 30] Read-only file system"),
        "the candidates are read-only: {inside}"
    );
    assert!(inside.contains("home True 1"), "{inside}");
    assert!(inside.contains("env None None"), "{inside}");
    // A second run gets a fresh folder of its own.
    let again = probe(&sb);
    let tmpdir = |out: &str| out.lines().find(|l| l.starts_with("tmpdir ")).map(str::to_string);
    assert!(tmpdir(&inside).is_some() && tmpdir(&inside) != tmpdir(&again), "{inside}\n{again}");
    assert!(!inside.contains("network ok") && inside.contains("network "), "{inside}");
    assert!(inside.contains("pids [1, 2]"), "its own PID namespace: only bwrap's init and the probe: {inside}");
    assert!(!project.join("written").exists());
    let dir = sb.dir().to_path_buf();
    drop(sb);
    assert!(!dir.exists(), "the sandbox directory is removed with the sandbox");
    let _ = std::fs::remove_dir_all(&project);
}
