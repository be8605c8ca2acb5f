//! `kernel-lsp rewrite` end to end: the real binary (and the library API)
//! against a chat-completions server on loopback (`llm_mock`) that streams
//! recorded answers from `tests/fixtures/llm/`; every candidate is checked by
//! the real harness on Triton's CPU interpreter, on `examples/gru/` run small.
//!
//! Needs a Python with torch and triton: `KERNEL_LSP_TEST_PYTHON`, else
//! `<repo>/.venv/bin/python`.

mod llm_mock;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use kernel_lsp::llm::{self, Action, CandidateStatus, RewriteRequest};
use llm_mock::{binary, fixture, fixture_code, python, repo, MockLlm, Reply};
use serde_json::Value;

const FILE: &str = "gru_python_loop.py";
const SMALL: [(&str, &str); 5] =
    [("seq_len", "4"), ("batch_size", "2"), ("input_size", "16"), ("hidden_size", "16"), ("num_layers", "2")];
const KEY_VAR: &str = "KLSP_TEST_LLM_KEY";
const KEY: &str = "sk-test-4f9a1c77e2b0-do-not-print";

/// A fresh project with the GRU example that launches per time step, its
/// reference, and a config pointing at the mock server.
fn project(name: &str, llm: &MockLlm, extra_llm_config: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-lsp-llm-{name}-{}", std::process::id()));
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

fn original() -> String {
    std::fs::read_to_string(repo().join("examples/gru").join(FILE)).expect("example")
}

fn rewrite(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let py = python();
    let mut argv = vec!["rewrite", FILE, "--cpu", "--python", py.as_str(), "--bench-timeout", "120"];
    let sets: Vec<String> = SMALL.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for s in &sets {
        argv.extend(["--set", s.as_str()]);
    }
    argv.extend(args);
    let mut cmd = Command::new(binary());
    cmd.args(&argv).current_dir(dir).env_remove(KEY_VAR);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("kernel-lsp runs")
}

fn json(out: &Output) -> Value {
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("stdout is not JSON ({e}):\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr))
    })
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// The project holds what it held (and `.kernel-lsp/`): candidates live in the sandbox, never here.
fn no_temp_files_left(dir: &Path) {
    let left: Vec<String> = std::fs::read_dir(dir)
        .expect("dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| ![FILE, "reference.py", "kernel-lsp.toml", ".kernel-lsp"].contains(&n.as_str()))
        .collect();
    assert!(left.is_empty(), "files left behind in the project: {left:?}");
}

#[test]
fn persistent_rewrite_that_passes_is_offered_with_its_diff() {
    let llm = MockLlm::start(vec![Reply::Answer(fixture("answer_persistent.md"))]);
    let dir = project("offered", &llm, "");
    let out =
        rewrite(&dir, &["--action", "persistent", "--candidates", "1", "--repairs", "0", "--format", "json"], &[]);
    let o = json(&out);
    assert_eq!(out.status.code(), Some(0), "{o:#}\n{}", stderr(&out));
    assert_eq!(o["verified_mode"], "cpu-interpreter");
    assert_eq!(o["title"], "Make persistent: correct on the CPU interpreter; speed not measured");
    assert_eq!(o["speedup"], Value::Null, "no speedup is claimed without a GPU");
    // "vs current" is measured directly: the current file, the reference and the
    // candidate timed together in one harness process, time(current) / time(candidate).
    let ranking = o["ranking"]["ranking"].as_array().expect("the final ranking");
    let ms = |role: &str| -> f64 {
        ranking
            .iter()
            .find(|e| e["role"] == role)
            .and_then(|e| e["ms"].as_f64())
            .unwrap_or_else(|| panic!("{role}: {o:#}"))
    };
    assert_eq!(ranking.len(), 3, "reference, current and one candidate: {ranking:?}");
    assert!(ms("reference") > 0.0);
    let ratio = o["candidates"][0]["speedup_vs_current"].as_f64().expect("a direct ratio");
    assert!((ratio - ms("current") / ms("candidate")).abs() < 1e-9, "{ratio} vs {ranking:?}");
    assert!(o["ranking"]["ranking_clock"].as_str().unwrap_or_default().contains("CPU interpreter"));
    assert_eq!(o["winner"], 1);
    assert_eq!(o["new_text"].as_str(), Some(fixture_code("answer_persistent.md").as_str()));
    let diff = o["diff"].as_str().expect("a diff");
    assert!(diff.starts_with(&format!("--- a/{FILE}\n+++ b/{FILE}\n@@ ")), "{diff}");
    assert!(diff.contains("+def gru_persistent_kernel(") && diff.contains("-def gru_step("), "{diff}");
    assert_eq!(o["candidates"][0]["status"], "winner");
    assert_eq!(o["candidates"][0]["bench"]["correct"], true);
    assert_eq!(o["tokens"]["estimated"], false, "usage comes from the stream");

    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    let r = &requests[0];
    assert_eq!(r.path, "/v1/chat/completions");
    assert_eq!(r.body["model"], "test-model");
    assert_eq!(r.body["stream"], true);
    assert_eq!(r.body["stream_options"]["include_usage"], true);
    assert_eq!(r.body["max_tokens"], 8000);
    assert!(!r.headers.iter().any(|h| h.starts_with("authorization:")), "no key configured, none sent");
    let system = r.body["messages"][0]["content"].as_str().unwrap_or("");
    assert!(system.contains("CRITICAL") && system.contains("There is NO `tl.tanh`"), "{system}");
    let user = r.last_message();
    assert!(user.contains("time loop INSIDE"), "the persistent template");
    assert!(user.contains("for t in range(seq_len):\n                gh = gemm_bias_out"), "the file");
    assert!(user.contains("self.gru = nn.GRU(input_size, hidden_size, num_layers, bias, batch_first"), "the reference");
    assert!(user.contains("KL001 python-time-loop-launch"), "the diagnostics");
    assert!(user.contains("NVIDIA H100") && user.contains("232448"), "the GPU and its shared memory");
    assert!(
        user.contains("## Verified example") && user.contains("def gru_wavefront_kernel("),
        "the verified GRU example for a GRU task"
    );

    assert_eq!(std::fs::read_to_string(dir.join(FILE)).unwrap(), original(), "no --apply: the file is untouched");
    no_temp_files_left(&dir);
    let timeline = std::fs::read_to_string(dir.join(".kernel-lsp/timeline.jsonl")).expect("timeline written");
    let stages: Vec<String> = timeline
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("JSON line")["stage"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(stages, ["sandbox", "baseline", "llm", "extract", "gate", "compile", "bench", "rank", "pick"]);

    let table = Command::new(binary()).args(["timeline", FILE]).current_dir(&dir).output().expect("timeline runs");
    let table = String::from_utf8_lossy(&table.stdout);
    assert!(table.contains("| pick ") && table.contains("correct (no timing)") && table.contains("1000+"), "{table}");
}

#[test]
fn answer_that_keeps_the_python_loop_is_rejected_by_the_gate_then_repaired_and_applied() {
    let llm = MockLlm::start(vec![
        Reply::Answer(fixture("answer_keeps_loop.md")),
        Reply::Answer(fixture("answer_persistent.md")),
    ]);
    let dir = project("gate", &llm, "");
    let out = rewrite(&dir, &["--action", "persistent", "--candidates", "1", "--repairs", "1", "--apply"], &[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}\n{}", stderr(&out));
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "one answer, one repair");
    let repair = requests[1].last_message();
    assert!(repair.contains("rejected by the static checker"), "{repair}");
    assert!(
        repair.contains("KL001 python-time-loop-launch") && repair.contains("launched inside a Python time loop"),
        "{repair}"
    );
    let history = requests[1].body["messages"].as_array().expect("messages");
    assert_eq!(history.len(), 4, "system, task, the rejected answer, the repair");
    assert_eq!(history[2]["role"], "assistant");

    assert!(text.contains("| gate ") && text.contains("rejected"), "{text}");
    assert!(text.contains("candidate 1 — winner after 2 answer(s)"), "{text}");
    assert!(text.contains("Make persistent: correct on the CPU interpreter; speed not measured"), "{text}");
    assert!(text.contains("+++ b/gru_python_loop.py"), "{text}");
    assert_eq!(
        std::fs::read_to_string(dir.join(FILE)).unwrap(),
        fixture_code("answer_persistent.md"),
        "--apply wrote the winner"
    );
    // The previous text is kept where the user can get it back, and the output says where.
    let backups: Vec<PathBuf> = std::fs::read_dir(dir.join(".kernel-lsp/backups"))
        .expect("a backups folder")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(backups.len(), 1, "{backups:?}");
    assert_eq!(std::fs::read_to_string(&backups[0]).unwrap(), original());
    let name = backups[0].file_name().unwrap().to_string_lossy().to_string();
    assert!(name.starts_with(&format!("{FILE}.")), "{name}");
    assert!(stderr(&out).contains(&format!("the previous text is in {}", backups[0].display())), "{}", stderr(&out));
    no_temp_files_left(&dir);
}

#[test]
fn an_answer_over_the_size_cap_is_refused_unread() {
    let llm = MockLlm::start(vec![Reply::Answer(fixture("answer_persistent.md"))]);
    let dir = project("cap", &llm, "max-answer-kb = 2\n");
    let out = rewrite(&dir, &["--action", "persistent", "--candidates", "1", "--repairs", "0"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("the LLM's answer is over llm.max-answer-kb = 2 KiB; refused"), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(dir.join(FILE)).unwrap(), original());
    no_temp_files_left(&dir);
}

#[test]
fn answer_using_tl_tanh_fails_to_compile_then_a_spliced_repair_passes() {
    let llm = MockLlm::start(vec![
        Reply::Answer(fixture("answer_tanh.md")),
        Reply::Answer(fixture("answer_tanh_fixed_kernel.md")),
    ]);
    let dir = project("tanh", &llm, "");
    let out =
        rewrite(&dir, &["--action", "persistent", "--candidates", "1", "--repairs", "2", "--format", "json"], &[]);
    let o = json(&out);
    assert_eq!(out.status.code(), Some(0), "{o:#}\n{}", stderr(&out));
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    let repair = requests[1].last_message();
    assert!(repair.contains("AttributeError: module 'triton.language' has no attribute 'tanh'"), "{repair}");
    assert!(repair.contains("n = tl.tanh(x_n + r * gh_n)"), "the failing source line: {repair}");
    assert!(!repair.contains("_klsp"), "temporary names are mapped back to the user's file: {repair}");
    let new_text = o["new_text"].as_str().expect("a winner");
    assert!(!new_text.contains("tl.tanh") && new_text.contains("2.0 * tl.sigmoid(2.0 * (x_n + r * gh_n)) - 1.0"));
    assert!(new_text.contains("class ModelNew"), "the repaired kernel was spliced into the whole candidate");
    assert_eq!(o["candidates"][0]["attempts"], 2);
    // The compiler could not be sure (its first error there may come from an assumed type):
    // the answer went on to the benchmark, which found it.
    let rows = o["timeline"].as_array().unwrap();
    let compile = rows.iter().find(|r| r["stage"] == "compile").expect("compile row").clone();
    assert_eq!((compile["score"].as_str(), compile["attempt"].as_u64()), (Some("pass"), Some(0)), "{compile}");
    let first_bench = rows.iter().find(|r| r["stage"] == "bench").expect("bench row").clone();
    assert!(first_bench["problem"].as_str().unwrap().starts_with("compile-error: AttributeError"), "{first_bench}");
    assert_eq!(std::fs::read_to_string(dir.join(FILE)).unwrap(), original());
    no_temp_files_left(&dir);
}

#[test]
fn an_answer_the_cpu_interpreter_accepts_but_the_compiler_rejects_is_repaired_before_it_is_offered() {
    // `break` runs as Python under the interpreter (the benchmark would call it correct);
    // Triton's compiler rejects it, and its message goes back to the LLM.
    let llm =
        MockLlm::start(vec![Reply::Answer(fixture("answer_break.md")), Reply::Answer(fixture("answer_persistent.md"))]);
    let dir = project("break", &llm, "");
    let out =
        rewrite(&dir, &["--action", "persistent", "--candidates", "1", "--repairs", "1", "--format", "json"], &[]);
    let o = json(&out);
    assert_eq!(out.status.code(), Some(0), "{o:#}\n{}", stderr(&out));
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "one repair");
    let repair = requests[1].last_message();
    assert!(repair.contains("Triton's compiler rejects it"), "{repair}");
    assert!(repair.contains("unsupported AST node type: Break"), "the compiler's message: {repair}");
    assert!(repair.contains("        break"), "the failing source line: {repair}");
    let new_text = o["new_text"].as_str().expect("a winner");
    assert!(!new_text.contains("break"), "the offered answer is the one that compiles");
    assert_eq!(std::fs::read_to_string(dir.join(FILE)).unwrap(), original());
    no_temp_files_left(&dir);
}

/// A failure of the LLM itself: exit 2, a clear message, the file untouched.
fn llm_failure(name: &str, reply: Reply, args: &[&str]) -> (Output, MockLlm) {
    let llm = MockLlm::start(vec![reply]);
    let dir = project(name, &llm, "");
    let mut argv = vec!["--action", "persistent", "--candidates", "1", "--repairs", "1"];
    argv.extend(args);
    let out = rewrite(&dir, &argv, &[]);
    assert_eq!(out.status.code(), Some(2), "{}\n{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert_eq!(std::fs::read_to_string(dir.join(FILE)).unwrap(), original(), "the user's file is byte-identical");
    no_temp_files_left(&dir);
    (out, llm)
}

#[test]
fn http_500_is_retried_with_backoff_then_reported() {
    let (out, llm) = llm_failure("http500", Reply::Status(500, "{\"error\": \"upstream exploded\"}".into()), &[]);
    let err = stderr(&out);
    assert!(err.contains("answered HTTP 500 (4 attempts): {\"error\": \"upstream exploded\"}"), "{err}");
    assert_eq!(llm.requests().len(), 4, "the first try and three retries");
}

#[test]
fn garbage_answer_is_a_clear_error() {
    let (out, _) = llm_failure("garbage", Reply::Garbage("<html><body>502 Bad Gateway</body></html>".into()), &[]);
    let err = stderr(&out);
    assert!(err.contains("error: the LLM's answer is not a chat-completions stream: it begins with `<html>"), "{err}");
}

#[test]
fn stalled_stream_is_a_clear_error() {
    let started = std::time::Instant::now();
    let (out, _) = llm_failure("stall", Reply::Stall(fixture("answer_persistent.md")), &["--timeout", "4"]);
    let err = stderr(&out);
    assert!(err.contains("stopped sending for 2 s in the middle of its answer (stalled stream)"), "{err}");
    assert!(started.elapsed().as_secs() < 60, "the stall ended the call, not the server");
}

#[test]
fn truncated_stream_is_a_clear_error() {
    let (out, _) = llm_failure("truncated", Reply::Truncated(fixture("answer_persistent.md")), &[]);
    let err = stderr(&out);
    assert!(
        err.contains("stream was cut off: the stream ended after")
            && err.contains("without `[DONE]` or a finish_reason"),
        "{err}"
    );
}

/// With no LLM configured (the default endpoint, nothing listening there)
/// the rewrite says how to configure one, before any benchmark runs.
#[test]
fn no_llm_configured_says_how_to_configure_one_before_anything_runs() {
    let llm = MockLlm::start(vec![Reply::Answer(String::new())]);
    let dir = project("unconfigured", &llm, "");
    std::fs::write(dir.join("kernel-lsp.toml"), "[bench]\ntimeout = 120\n").unwrap();
    if std::net::TcpStream::connect("127.0.0.1:8000").is_ok() {
        eprintln!("\n!!!!! no_llm_configured...: SKIPPED, something listens on 127.0.0.1:8000 here !!!!!\n");
        return;
    }
    let started = std::time::Instant::now();
    let out = rewrite(&dir, &["--action", "persistent", "--candidates", "1"], &[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no LLM is configured: nothing answers at http://127.0.0.1:8000/v1"), "{err}");
    assert!(err.contains("Set llm.base-url") && err.contains("llm.model") && err.contains("llm.api-key-env"), "{err}");
    assert_eq!(err.matches("error:").count(), 1, "one message: {err}");
    assert!(!err.contains("baseline"), "no benchmark ran first: {err}");
    assert!(started.elapsed().as_secs() < 20, "said at once, not after a benchmark");
    assert!(!dir.join(".kernel-lsp/timeline.jsonl").exists(), "nothing ran, nothing recorded");
}

/// The answer's own reference line does not replace the user's: the applied
/// file is benchmarked against the reference it was verified against.
#[test]
fn an_applied_rewrite_keeps_the_reference_declaration_and_benchmarks() {
    let answer = fixture("answer_persistent.md").replacen(
        "```python\n",
        "```python\n# kernel-lsp: reference = reference_gru.py\n",
        1,
    );
    let llm = MockLlm::start(vec![Reply::Answer(answer)]);
    let dir = project("directive", &llm, "");
    let mine = "my_gru.py";
    std::fs::write(dir.join(mine), format!("# kernel-lsp: reference = ref_gru.py\n{}", original())).unwrap();
    std::fs::rename(dir.join("reference.py"), dir.join("ref_gru.py")).unwrap();
    std::fs::remove_file(dir.join(FILE)).unwrap();
    let py = python();
    let mut argv = vec!["rewrite", mine, "--cpu", "--python", py.as_str(), "--bench-timeout", "120"];
    let sets: Vec<String> = SMALL.iter().map(|(k, v)| format!("{k}={v}")).collect();
    for s in &sets {
        argv.extend(["--set", s.as_str()]);
    }
    argv.extend(["--action", "persistent", "--candidates", "1", "--repairs", "0", "--apply"]);
    let out = Command::new(binary()).args(&argv).current_dir(&dir).env_remove(KEY_VAR).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let applied = std::fs::read_to_string(dir.join(mine)).unwrap();
    assert!(applied.starts_with("# kernel-lsp: reference = ref_gru.py\n"), "{applied}");
    assert!(!applied.contains("reference_gru.py"), "{applied}");
    let mut bench = vec!["bench", mine, "--cpu", "--python", py.as_str(), "--format", "json"];
    for s in &sets {
        bench.extend(["--set", s.as_str()]);
    }
    let out = Command::new(binary()).args(&bench).current_dir(&dir).output().unwrap();
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", stderr(&out)));
    assert_eq!(r["correct"], true, "{r:#}");
    assert!(r["reference"].as_str().unwrap_or_default().ends_with("ref_gru.py"), "{r:#}");
}

#[test]
fn unreachable_server_is_a_clear_error() {
    let llm = MockLlm::start(vec![Reply::Answer(String::new())]);
    let dir = project("unreachable", &llm, "");
    std::fs::write(dir.join("kernel-lsp.toml"), "[llm]\nbase-url = \"http://127.0.0.1:9/v1\"\n").unwrap();
    let out = rewrite(&dir, &["--action", "persistent", "--candidates", "1"], &[]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(
        err.contains("cannot reach the LLM at http://127.0.0.1:9/v1/chat/completions")
            && err.contains("Is the server running?"),
        "{err}"
    );
    assert_eq!(std::fs::read_to_string(dir.join(FILE)).unwrap(), original());
}

#[test]
fn wrong_key_is_reported_and_the_key_never_printed_even_in_trace_logs() {
    let llm = MockLlm::start(vec![Reply::EchoKey401]);
    let dir = project("key", &llm, &format!("api-key-env = \"{KEY_VAR}\"\n"));
    let out = rewrite(
        &dir,
        &["--action", "persistent", "--candidates", "2", "--format", "json"],
        &[(KEY_VAR, KEY), ("KERNEL_LSP_LOG", "trace")],
    );
    assert_eq!(out.status.code(), Some(2));
    let (stdout, err) = (String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(err.contains("rejected the API key (HTTP 401)") && err.contains(&format!("${KEY_VAR}")), "{err}");
    assert!(err.contains("Incorrect API key provided: Bearer ***"), "the server's echo is scrubbed: {err}");
    assert!(!stdout.contains(KEY) && !err.contains(KEY), "the key leaked:\n{stdout}\n{err}");
    assert!(!err.contains(&KEY[3..15]), "part of the key leaked:\n{err}");
    let timeline = std::fs::read_to_string(dir.join(".kernel-lsp/timeline.jsonl")).expect("timeline");
    assert!(!timeline.contains(KEY), "the key leaked into the timeline");
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "401 is not retried; one per candidate");
    assert!(
        requests[0].headers.iter().any(|h| h == &format!("authorization: Bearer {KEY}")),
        "{:?}",
        requests[0].headers
    );
    assert_eq!(std::fs::read_to_string(dir.join(FILE)).unwrap(), original());

    let out = rewrite(&dir, &["--action", "persistent"], &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains(&format!("the API key variable ${KEY_VAR} (llm.api-key-env) is not set")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn library_api_runs_candidates_in_parallel_and_reports_every_stage() {
    let llm = MockLlm::start(vec![Reply::Answer(fixture("answer_persistent.md"))]);
    let dir = project("library", &llm, "");
    let file = dir.join(FILE);
    let (settings, _) = kernel_lsp::Settings::discover(&file).expect("settings");
    let mut req = RewriteRequest::new(file.clone(), Action::Persistent, settings);
    req.candidates = Some(2);
    req.repairs = Some(0);
    req.python = Some(python());
    req.cpu = true;
    req.overrides = SMALL.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    req.bench_timeout = Some(120.0);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut events = Vec::new();
    let outcome = runtime.block_on(llm::rewrite(req, |ev| events.push(ev))).expect("the rewrite runs");

    assert_eq!(outcome.candidates.len(), 2);
    assert_eq!(outcome.winner, Some(1), "equal candidates: the first wins");
    assert_eq!(outcome.candidates[0].status, CandidateStatus::Winner);
    assert_eq!(outcome.candidates[1].status, CandidateStatus::Correct);
    assert_eq!(outcome.verified_mode.as_deref(), Some("cpu-interpreter"));
    assert_eq!(outcome.speedup, None);
    assert_eq!(llm.requests().len(), 2);
    let started = events.iter().filter(|e| !e.finished).count();
    let finished: Vec<_> = events.iter().filter(|e| e.finished).map(|e| e.record.clone()).collect();
    assert_eq!(started, 5, "baseline and, per candidate, llm and bench announce their start");
    assert_eq!(finished, outcome.timeline, "the timeline is the finished stages");
    assert_eq!(finished.iter().filter(|r| r.stage == "bench").count(), 2);
    let json = serde_json::to_value(&outcome).expect("the outcome serializes");
    assert_eq!(json["candidates"][1]["status"], "correct");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original());
    no_temp_files_left(&dir);
}
