//! `kernel-lsp bench` end to end: the real binary, the real harness, Triton's
//! CPU interpreter, small shapes (`--set N=300`). Each test copies its
//! fixtures from `tests/fixtures/bench/` into a fresh project directory, so
//! the history it writes stays there.
//!
//! Needs a Python with torch and triton: `KERNEL_LSP_TEST_PYTHON`, else
//! `<repo>/.venv/bin/python` (the test script creates it).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use kernel_lsp::bench::{self, BenchRequest};
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn python() -> String {
    std::env::var("KERNEL_LSP_TEST_PYTHON").unwrap_or_else(|_| repo().join(".venv/bin/python").display().to_string())
}

/// The `kernel-lsp` binary, built once per test run.
fn binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target"));
        let bin = target.join("debug").join("kernel-lsp");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status =
            Command::new(cargo).args(["build", "-p", "kernel-lsp"]).current_dir(repo()).status().expect("cargo runs");
        assert!(status.success(), "cargo build -p kernel-lsp failed");
        assert!(bin.is_file(), "no binary at {}", bin.display());
        bin
    })
}

/// A fresh project (with a `kernel-lsp.toml`) holding copies of `fixtures`.
fn project(name: &str, fixtures: &[&str]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-lsp-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(dir.join("kernel-lsp.toml"), "").expect("config");
    for f in fixtures {
        std::fs::copy(repo().join("tests/fixtures/bench").join(f), dir.join(f)).expect("fixture copies");
    }
    dir
}

struct Run {
    code: i32,
    json: Value,
    elapsed: Duration,
}

fn bench_json(dir: &Path, candidate: &str, extra: &[&str]) -> Run {
    let py = python();
    let mut args = vec!["bench", candidate, "--format", "json", "--cpu", "--set", "N=300"];
    if !extra.contains(&"--timeout") {
        args.extend(["--timeout", "120"]);
    }
    if !extra.contains(&"--python") {
        args.extend(["--python", py.as_str()]);
    }
    args.extend(extra);
    let start = Instant::now();
    let out = Command::new(binary()).args(&args).current_dir(dir).output().expect("kernel-lsp runs");
    let elapsed = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("stdout is not one JSON object ({e}):\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr))
    });
    Run { code: out.status.code().unwrap_or(-1), json, elapsed }
}

fn error_kind(run: &Run) -> &str {
    run.json["error"]["kind"].as_str().unwrap_or("<no error>")
}

#[test]
fn correct_candidate_passes_under_the_interpreter() {
    let dir = project("correct", &["add_ref.py", "add_new.py"]);
    let run = bench_json(&dir, "add_new.py", &[]);
    assert_eq!(run.code, 0, "{:#}", run.json);
    assert_eq!(run.json["mode"], "cpu-interpreter");
    assert_eq!(run.json["correct"], true);
    assert_eq!(run.json["error"], Value::Null);
    assert_eq!(run.json["speedup"], Value::Null, "the interpreter never reports a speedup");
    assert_eq!(run.json["reference_found_by"], "sibling");
    assert_eq!(run.json["launches_per_forward"], 1);
    assert_eq!(run.json["kernels"][0]["name"], "scale_add_kernel");
    assert_eq!(run.json["kernels"][0]["line"], 11);
    assert!(run.json.get("overrides_unused").is_none(), "N is a constant of add_ref.py");

    let history = std::fs::read_to_string(dir.join(".kernel-lsp/history.jsonl")).expect("history written");
    assert_eq!(history.lines().count(), 1);
    let entry: Value = serde_json::from_str(history.trim()).expect("history line is JSON");
    assert_eq!(entry["file"], "add_new.py");
    assert_eq!(entry["hash"].as_str().map(str::len), Some(64));
    assert_eq!(entry["result"]["correct"], true);

    let out = Command::new(binary()).args(["history", "add_new.py"]).current_dir(&dir).output().expect("history runs");
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.contains("| v1 ") && table.contains("correct (no timing)"), "{table}");
}

#[test]
fn text_table_shows_the_kernel() {
    let dir = project("text", &["add_ref.py", "add_new.py"]);
    let out = Command::new(binary())
        .args(["bench", "add_new.py", "--cpu", "--set", "N=300", "--python", &python()])
        .current_dir(&dir)
        .output()
        .expect("kernel-lsp runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(text.contains("speedup") && text.contains("correct"), "{text}");
    assert!(text.contains("scale_add_kernel"), "{text}");
    assert!(text.contains("CPU interpreter: correctness only"), "{text}");
    assert!(!text.contains("user output must not corrupt"), "user prints go to stderr: {text}");
}

#[test]
fn mismatch_reports_the_worst_element() {
    let dir = project("mismatch", &["add_ref.py", "add_mismatch.py"]);
    let run = bench_json(&dir, "add_mismatch.py", &[]);
    assert_eq!(run.code, 1, "{:#}", run.json);
    assert_eq!(run.json["correct"], false);
    assert_eq!(error_kind(&run), "mismatch");
    assert_eq!(run.json["reference_found_by"], "comment");
    assert_eq!(run.json["error"]["line"], 16, "on `class ModelNew`");
    let worst = run.json["mismatch"]["max_abs_diff"].as_f64().unwrap_or(0.0);
    assert!((worst - 0.5).abs() < 1e-6, "{:#}", run.json);
    assert_eq!(run.json["mismatch"]["mismatched"], 300);
}

#[test]
fn compile_error_lands_on_the_kernel_line_and_column() {
    let dir = project("compile", &["add_ref.py", "add_compile_error.py"]);
    let run = bench_json(&dir, "add_compile_error.py", &[]);
    assert_eq!(run.code, 2, "{:#}", run.json);
    assert_eq!(error_kind(&run), "compile-error");
    assert!(run.json["error"]["message"].as_str().unwrap_or("").contains("arange"), "{:#}", run.json);
    // `offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)`: `tl.arange` at line 10, column 39.
    assert_eq!(run.json["error"]["line"], 10);
    assert_eq!(run.json["error"]["column"], 39);
    assert!(run.json["error"]["file"].as_str().unwrap_or("").ends_with("add_compile_error.py"));
}

#[test]
fn exception_lands_on_the_candidate_frame() {
    let dir = project("raises", &["add_ref.py", "add_raises.py"]);
    let run = bench_json(&dir, "add_raises.py", &[]);
    assert_eq!(run.code, 2, "{:#}", run.json);
    assert_eq!(error_kind(&run), "exception");
    assert!(run.json["error"]["message"].as_str().unwrap_or("").contains("is invalid for input of size 300"));
    assert_eq!(run.json["error"]["line"], 12);
    assert_eq!(run.json["error"]["column"], 16);
}

#[test]
fn grid_barrier_spin_ends_with_a_timeout() {
    let dir = project("hang", &["add_ref.py", "barrier_hang.py"]);
    let run = bench_json(&dir, "barrier_hang.py", &["--timeout", "6"]);
    assert_eq!(run.code, 2, "{:#}", run.json);
    assert_eq!(error_kind(&run), "timeout");
    assert!(run.json["error"]["message"].as_str().unwrap_or("").contains("grid-wide barrier"), "{:#}", run.json);
    assert_eq!(run.json["error"]["line"], 21, "on `class ModelNew`");
    assert!(run.elapsed < Duration::from_secs(40), "took {:?}", run.elapsed);
}

#[test]
fn missing_reference_says_how_to_declare_one() {
    let dir = project("orphan", &["orphan_new.py"]);
    let run = bench_json(&dir, "orphan_new.py", &[]);
    assert_eq!(run.code, 2, "{:#}", run.json);
    assert_eq!(error_kind(&run), "no-reference");
    let message = run.json["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains("# kernel-lsp: reference = ") && message.contains("orphan.py"), "{message}");
}

#[test]
fn python_without_torch_is_a_missing_dependency() {
    let dir = project("notorch", &["add_ref.py", "add_new.py"]);
    let venv = dir.join("bare-venv");
    let made = Command::new("python3").args(["-m", "venv", "--without-pip"]).arg(&venv).status().expect("python3 runs");
    assert!(made.success());
    let bare = venv.join("bin/python").display().to_string();
    let run = bench_json(&dir, "add_new.py", &["--python", &bare]);
    assert_eq!(run.code, 2, "{:#}", run.json);
    assert_eq!(error_kind(&run), "missing-dependency");
    let message = run.json["error"]["message"].as_str().unwrap_or("");
    assert!(message.contains(&bare) && message.contains("pip install torch triton"), "{message}");
}

#[test]
fn unknown_override_is_reported() {
    let dir = project("override", &["add_ref.py", "add_new.py"]);
    let run = bench_json(&dir, "add_new.py", &["--set", "NOT_A_CONSTANT=3"]);
    assert_eq!(run.code, 0, "{:#}", run.json);
    assert_eq!(run.json["overrides_unused"], serde_json::json!(["NOT_A_CONSTANT"]));
}

fn request(dir: &Path, candidate: &str, timeout: f64) -> BenchRequest {
    BenchRequest {
        candidate: dir.join(candidate),
        python: Some(python()),
        overrides: vec![("N".into(), "300".into())],
        cpu: true,
        timeout: Some(timeout),
        ..Default::default()
    }
}

#[test]
fn warm_worker_is_reused_and_survives_a_timeout() {
    let dir = project("warm", &["add_ref.py", "add_new.py", "barrier_hang.py"]);
    let first = bench::run_blocking(request(&dir, "add_new.py", 120.0), |_| {}).expect("first run");
    assert_eq!(first.correct, Some(true), "{first:#?}");
    let worker = first.worker_pid().expect("a warm worker ran it");

    let hang = bench::run_blocking(request(&dir, "barrier_hang.py", 5.0), |_| {}).expect("hang run");
    assert_eq!(hang.error.as_ref().map(|e| e.kind.as_str()), Some("timeout"), "{hang:#?}");

    let mut progress = Vec::new();
    let second = bench::run_blocking(request(&dir, "add_new.py", 120.0), |m| progress.push(m)).expect("second run");
    assert_eq!(second.correct, Some(true), "{second:#?}");
    assert_eq!(second.worker_pid(), Some(worker), "the same worker forked both runs");
    assert_ne!(second.extra.get("pid"), first.extra.get("pid"), "each run is a fresh child");
    assert!(progress.iter().any(|m| m.contains("trial 1")), "{progress:?}");
}

/// The GPU path: Triton's own `CompilationError` says `at 2:38` (relative to the
/// kernel's `def`); the harness maps it to line 10, column 39 of the file. Triton's
/// front end compiles for a GPU target without a GPU, so this runs on the CPU.
#[test]
fn triton_compilation_error_at_l_c_maps_to_the_absolute_position() {
    let script = r#"
import importlib.util, sys
sys.path.insert(0, sys.argv[1])
import harness, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
spec = importlib.util.spec_from_file_location("cand", sys.argv[2])
m = importlib.util.module_from_spec(spec); sys.modules["cand"] = m; spec.loader.exec_module(m)
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "scale": "fp32", "BLOCK": "i32"}
try:
    triton.compile(ASTSource(m.scale_add_kernel, signature=sig, constexprs={}), target=GPUTarget("cuda", 90, 32))
except triton.compiler.errors.CompilationError as e:
    assert "at 2:38:" in str(e), str(e)
    file, line, column = harness.locate_compile_error(e, [m])
    print(line, column, file.endswith("add_compile_error.py"))
"#;
    let out = Command::new(python())
        .args(["-c", script])
        .arg(repo().join("server/harness"))
        .arg(repo().join("tests/fixtures/bench/add_compile_error.py"))
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim(), "10 39 True", "stderr: {}", String::from_utf8_lossy(&out.stderr));
}
