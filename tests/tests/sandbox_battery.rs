//! The sandbox against hostile answers, through the whole rewrite pipeline:
//! the real binary, the loopback chat-completions server (`llm_mock`), the
//! real harness on Triton's CPU interpreter, the real bubblewrap.
//!
//! The answer is a correct persistent GRU with a payload in its module body
//! (`tests/fixtures/hostile/probe.py`) that tries a shell, writes into the
//! project and a canary folder, the network, the API key (environment,
//! `/proc/*/environ`, the parent's memory), a remount, a nested user
//! namespace, joining other namespaces, and signals to a victim process. The
//! first answer reports what it saw (its error goes into the repair prompt);
//! the repair is the same payload, silent and correct, so it also runs in the
//! ranking stage. Each canary must stay untouched, the key must appear
//! nowhere (prompts, timeline, history, output, canaries, the listener), the
//! project must hold no new file but `.kernel-lsp/`, the temp dir nothing.
//!
//! Run as root and as an unprivileged user (uid 65534 through `setpriv` when
//! the tests run as root; the tests' own user otherwise). A control runs the
//! harmless part of the payload with `llm.sandbox = "none"` and sees it
//! succeed: the attacks are real.

#[allow(dead_code)]
mod llm_mock;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use kernel_lsp::llm::sandbox;
use llm_mock::{binary, fixture_code, python, repo, MockLlm, Reply};
use serde_json::Value;

const FILE: &str = "gru_python_loop.py";
const SMALL: [&str; 5] = ["seq_len=4", "batch_size=2", "input_size=16", "hidden_size=16", "num_layers=2"];
const KEY_VAR: &str = "KLSP_BATTERY_KEY";
/// Not shaped like a key (no digits, no known prefix): redaction by shape cannot hide a leak of it.
const KEY: &str = "battery-canary-secret-value-never-leaves";
const ALL_ATTACKS: &str = "shell,write,network,key,remount,nsjoin,signals";
const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Who runs the rewrite: the tests' user, or uid 65534 through setpriv.
#[derive(Clone, Copy, PartialEq, Debug)]
enum As {
    Me,
    Nobody,
}

fn command(who: As, program: &str) -> Command {
    match who {
        As::Me => Command::new(program),
        As::Nobody => {
            let mut c = Command::new("setpriv");
            c.args(["--reuid", &NOBODY.to_string(), "--regid", &NOBODY.to_string(), "--clear-groups", "--", program]);
            c
        }
    }
}

/// A folder `who` owns, mode 0700 for the root run's canaries.
fn folder(name: &str, who: As) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("klsp-battery-{name}-{who:?}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    if who == As::Nobody {
        std::os::unix::fs::chown(&dir, Some(NOBODY), Some(NOBODY)).expect("chown to nobody");
    }
    dir
}

/// Records everything sent to a loopback port.
struct Listener {
    port: u16,
    received: Arc<Mutex<Vec<u8>>>,
}

impl Listener {
    fn start() -> Listener {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = l.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let sink = received.clone();
        std::thread::spawn(move || {
            for mut s in l.incoming().flatten() {
                let mut buf = Vec::new();
                let _ = s.read_to_end(&mut buf);
                sink.lock().unwrap().extend_from_slice(b"<connection>");
                sink.lock().unwrap().extend(buf);
            }
        });
        Listener { port, received }
    }

    fn text(&self) -> String {
        String::from_utf8_lossy(&self.received.lock().unwrap()).to_string()
    }
}

/// The correct persistent answer with the probe after its imports.
fn hostile(attacks: &str, raise: bool, canary: &Path, project: &Path, port: u16, victim: u32) -> String {
    let probe = std::fs::read_to_string(repo().join("tests/fixtures/hostile/probe.py"))
        .expect("probe")
        .replace("{ATTACKS}", attacks)
        .replace("{RAISE}", if raise { "yes" } else { "no" })
        .replace("{CANARY}", &canary.display().to_string())
        .replace("{PROJECT}", &project.display().to_string())
        .replace("{PORT}", &port.to_string())
        .replace("{VICTIM}", &victim.to_string());
    let code = fixture_code("answer_persistent.md");
    let anchor = "import triton.language as tl\n";
    let at = code.find(anchor).expect("the answer imports triton.language") + anchor.len();
    format!("Persistent version:\n\n```python\n{}\n{probe}\n{}```\n", &code[..at], &code[at..])
}

struct Run {
    out: Output,
    json: Value,
    requests: Vec<llm_mock::Recorded>,
    project: PathBuf,
    tmp: PathBuf,
}

/// One rewrite of the GRU example by `who`, with `answers` replayed and `sandbox` set.
fn rewrite(who: As, name: &str, answers: Vec<String>, sandbox: &str, project: PathBuf) -> Run {
    let llm = MockLlm::start(answers.into_iter().map(Reply::Answer).collect());
    let tmp = folder(&format!("{name}-tmp"), who);
    let home = folder(&format!("{name}-home"), who);
    std::fs::write(
        project.join("kernel-lsp.toml"),
        format!(
            "[llm]\nbase-url = \"{}\"\nmodel = \"test-model\"\napi-key-env = \"{KEY_VAR}\"\nsandbox = \"{sandbox}\"\n",
            llm.base_url
        ),
    )
    .unwrap();
    for f in [FILE, "reference.py"] {
        std::fs::copy(repo().join("examples/gru").join(f), project.join(f)).expect("example copies");
    }
    if who == As::Nobody {
        for f in ["kernel-lsp.toml", FILE, "reference.py"] {
            std::os::unix::fs::chown(project.join(f), Some(NOBODY), Some(NOBODY)).unwrap();
        }
    }
    let py = python();
    let bin = binary().display().to_string();
    let mut cmd = command(who, &bin);
    cmd.args(["rewrite", FILE, "--cpu", "--python", &py, "--bench-timeout", "150"]);
    for s in SMALL {
        cmd.args(["--set", s]);
    }
    cmd.args(["--action", "persistent", "--candidates", "1", "--repairs", "1", "--format", "json"]);
    let out = cmd
        .current_dir(&project)
        .env(KEY_VAR, KEY)
        .env("TMPDIR", &tmp)
        .env("HOME", &home)
        .env_remove("XDG_CACHE_HOME")
        .output()
        .expect("kernel-lsp runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!("stdout is not JSON ({e}):\n{stdout}\nstderr:\n{}", String::from_utf8_lossy(&out.stderr))
    });
    let _ = std::fs::remove_dir_all(&home);
    Run { requests: llm.requests(), out, json, project, tmp }
}

/// Every file under `dir`, relative, but `.kernel-lsp/` and `skip`.
fn files(dir: &Path, skip: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            let rel = p.strip_prefix(dir).unwrap().display().to_string();
            if rel == ".kernel-lsp" || skip.contains(&rel.as_str()) {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}

fn all_text_under(dir: &Path) -> String {
    let mut text = String::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(b) = std::fs::read(&p) {
                text.push_str(&String::from_utf8_lossy(&b));
            }
        }
    }
    text
}

fn victim(who: As) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    command(who, "sleep").arg("600").process_group(0).stdout(Stdio::null()).spawn().expect("sleep starts")
}

fn alive(child: &mut std::process::Child) -> bool {
    matches!(child.try_wait(), Ok(None))
}

/// Whether `who` can run this battery here; says loudly why not.
fn can_run(who: As, test: &str) -> bool {
    if let Err(e) = sandbox::bwrap_works() {
        eprintln!("\n!!!!! {test}: SKIPPED, bubblewrap cannot start a sandbox here: {e} !!!!!\n");
        return false;
    }
    if who == As::Nobody {
        let py = python();
        let ok = command(who, &py)
            .args(["-c", "import torch, triton"])
            .current_dir("/")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
            && command(who, &binary().display().to_string()).arg("--version").status().is_ok_and(|s| s.success());
        if !ok {
            eprintln!(
                "\n!!!!! {test}: SKIPPED, uid {NOBODY} cannot run {py} with torch or the kernel-lsp binary \
                 (scripts/test.sh makes their folders traversable when it runs as root) !!!!!\n"
            );
            return false;
        }
    }
    true
}

fn battery(who: As, test: &str) {
    if !can_run(who, test) {
        return;
    }
    let project = folder("project", who);
    let canary = folder("canary", who);
    let listener = Listener::start();
    let mut victim = victim(who);
    let pid = victim.id();
    let answers = vec![
        hostile(ALL_ATTACKS, true, &canary, &project, listener.port, pid),
        hostile(ALL_ATTACKS, false, &canary, &project, listener.port, pid),
    ];
    let run = rewrite(who, test, answers, "bwrap", project);
    let o = &run.json;
    let stderr = String::from_utf8_lossy(&run.out.stderr).to_string();

    // The payload ran: its report is in the repair prompt, and what it tried failed.
    assert_eq!(run.requests.len(), 2, "one answer and one repair: {o:#}\n{stderr}");
    let report = run.requests[1].last_message();
    assert!(report.contains("PROBE REPORT"), "the probe's error reached the repair prompt:\n{report}");
    for attack in ["shell:", "write-project:", "write-canary:", "network:", "remount:", "nsjoin:", "signals:"] {
        assert!(report.contains(attack), "{attack} was tried:\n{report}");
    }
    for escaped in [
        "shell: ok 0",
        "write-project: ok",
        "write-canary: ok",
        "network: ok",
        "nsjoin-network: ok",
        "nsjoin-root: ok",
        "remount-write: ok",
        "remount-userns-write: ok",
        "signals-group: ok",
    ] {
        assert!(!report.contains(escaped), "{escaped}:\n{report}");
    }
    // The repair is correct and was ranked: the payload also ran in the ranking stage.
    assert!(["correct", "winner"].contains(&o["candidates"][0]["status"].as_str().unwrap_or("")), "{o:#}\n{stderr}");
    let stages: Vec<&str> = o["timeline"].as_array().unwrap().iter().filter_map(|r| r["stage"].as_str()).collect();
    assert!(stages.contains(&"rank"), "{stages:?}");
    let sandbox_row = o["timeline"].as_array().unwrap().iter().find(|r| r["stage"] == "sandbox").unwrap();
    assert_eq!(sandbox_row["score"], "bwrap", "{o:#}");

    // Nothing got out.
    assert!(files(&canary, &[]).is_empty(), "the canary folder was written: {:?}", files(&canary, &[]));
    assert_eq!(listener.text(), "", "the loopback listener was reached");
    assert!(alive(&mut victim), "the victim process was killed from inside the sandbox");
    let left = files(&run.project, &[]);
    assert_eq!(left, vec![FILE.to_string(), "kernel-lsp.toml".to_string(), "reference.py".to_string()], "{left:?}");
    assert!(files(&run.tmp, &[]).is_empty(), "left in the temp dir: {:?}", files(&run.tmp, &[]));
    assert!(std::fs::read_dir(&run.tmp).unwrap().next().is_none(), "a folder was left in the temp dir");

    // The key is nowhere: not in any prompt, the output, the timeline or history, reversed or not.
    let reversed: String = KEY.chars().rev().collect();
    let mut everywhere = String::from_utf8_lossy(&run.out.stdout).to_string() + &stderr;
    for r in &run.requests {
        everywhere.push_str(&r.body.to_string());
    }
    everywhere.push_str(&all_text_under(&run.project));
    everywhere.push_str(&all_text_under(&canary));
    everywhere.push_str(&listener.text());
    assert!(!everywhere.contains(KEY) && !everywhere.contains(&reversed), "the key leaked");
    assert!(report.contains("loot-reversed"), "the probe reported what it read");
    assert!(
        run.requests.iter().all(|r| r.headers.iter().any(|h| h == &format!("authorization: Bearer {KEY}"))),
        "the key reaches the LLM in the header only"
    );
    let _ = victim.kill();
    for d in [&run.project, &canary, &run.tmp] {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn hostile_answers_stay_in_the_sandbox_run_by_root() {
    if !is_root() {
        eprintln!(
            "\n!!!!! hostile_answers_stay_in_the_sandbox_run_by_root: SKIPPED, the tests do not run as root !!!!!\n"
        );
        return;
    }
    battery(As::Me, "root");
}

#[test]
fn hostile_answers_stay_in_the_sandbox_run_by_a_user() {
    battery(if is_root() { As::Nobody } else { As::Me }, "user");
}

/// The attacks are real: without the sandbox (said explicitly), the same
/// payload's harmless part writes the canary, reaches the listener and reads
/// the key from `/proc`; the private temp dir is still removed.
#[test]
fn without_the_sandbox_the_same_payload_gets_out() {
    let project = folder("project-none", As::Me);
    let canary = folder("canary-none", As::Me);
    let listener = Listener::start();
    let answers = vec![hostile("write,network,key", false, &canary, &project, listener.port, 0)];
    let run = rewrite(As::Me, "none", answers, "none", project);
    let o = &run.json;
    assert!(["correct", "winner"].contains(&o["candidates"][0]["status"].as_str().unwrap_or("")), "{o:#}");
    assert!(canary.join("written").exists(), "{o:#}");
    assert!(listener.text().contains("network"), "{}", listener.text());
    let loot = std::fs::read_to_string(canary.join("loot")).unwrap_or_default();
    assert!(loot.contains(KEY), "with the user's rights /proc shows the server's environment");
    let sandbox_row = o["timeline"].as_array().unwrap().iter().find(|r| r["stage"] == "sandbox").unwrap();
    assert!(sandbox_row["problem"].as_str().unwrap().contains("with your rights"), "{sandbox_row:#}");
    assert!(files(&run.tmp, &[]).is_empty(), "left in the temp dir: {:?}", files(&run.tmp, &[]));
    for d in [&run.project, &canary, &run.tmp] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Pids whose command line names `path` (what `pgrep -f` does, without procps).
fn processes_naming(path: &Path) -> Vec<u32> {
    let needle = path.display().to_string();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        if pid != std::process::id() && String::from_utf8_lossy(&cmdline).replace('\0', " ").contains(&needle) {
            out.push(pid);
        }
    }
    out
}

/// A rewrite killed mid-run (SIGTERM while the LLM call hangs, SIGINT while
/// the baseline benchmark runs) removes its sandbox directory, ends the
/// sandboxed processes, and leaves the project as it was.
#[test]
fn a_rewrite_stopped_by_a_signal_leaves_nothing_behind() {
    if !can_run(As::Me, "a_rewrite_stopped_by_a_signal_leaves_nothing_behind") {
        return;
    }
    for (signal, code, wait_for_llm) in [(libc::SIGTERM, 143, true), (libc::SIGINT, 130, false)] {
        let llm = MockLlm::start(vec![Reply::Stall(llm_mock::fixture("answer_persistent.md"))]);
        let project = folder(&format!("project-signal{signal}"), As::Me);
        let tmp = folder(&format!("tmp-signal{signal}"), As::Me);
        std::fs::write(
            project.join("kernel-lsp.toml"),
            format!("[llm]\nbase-url = \"{}\"\nmodel = \"m\"\ntimeout = 300\n", llm.base_url),
        )
        .unwrap();
        for f in [FILE, "reference.py"] {
            std::fs::copy(repo().join("examples/gru").join(f), project.join(f)).unwrap();
        }
        let py = python();
        let mut cmd = Command::new(binary());
        cmd.args(["rewrite", FILE, "--cpu", "--python", &py, "--action", "persistent", "--candidates", "1"]);
        for s in SMALL {
            cmd.args(["--set", s]);
        }
        let mut child = cmd
            .current_dir(&project)
            .env("TMPDIR", &tmp)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("kernel-lsp runs");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            let sandbox_there = std::fs::read_dir(&tmp).unwrap().flatten().any(|e| {
                e.file_name().to_string_lossy().starts_with("kernel-lsp-sandbox-")
                    && (!wait_for_llm || !llm.requests().is_empty())
            });
            // SIGINT lands while the baseline's harness runs inside the sandbox.
            let harness_running = wait_for_llm || !processes_naming(&tmp).is_empty();
            if sandbox_there && harness_running {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "the rewrite never got going");
            assert!(matches!(child.try_wait(), Ok(None)), "the rewrite ended by itself");
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        if !wait_for_llm {
            std::thread::sleep(std::time::Duration::from_secs(2));
        }
        // SAFETY: kill on our own child's pid.
        unsafe { libc::kill(child.id() as i32, signal) };
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(code), "signal {signal}");
        std::thread::sleep(std::time::Duration::from_millis(500));
        let left: Vec<_> = std::fs::read_dir(&tmp).unwrap().flatten().map(|e| e.file_name()).collect();
        assert!(left.is_empty(), "signal {signal}: left in the temp dir: {left:?}");
        let alive = processes_naming(&tmp);
        assert!(alive.is_empty(), "signal {signal}: sandboxed processes outlived the rewrite: {alive:?}");
        let files = files(&project, &[]);
        assert_eq!(files, vec![FILE.to_string(), "kernel-lsp.toml".to_string(), "reference.py".to_string()]);
        let _ = std::fs::remove_dir_all(&project);
        let _ = std::fs::remove_dir_all(&tmp);
    }
}
