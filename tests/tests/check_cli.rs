//! `kernel-lsp check` and `kernel-lsp rules` as a user or a pipeline runs them:
//! the real binary, real files, exit codes and the JSON shape.

mod common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn kernel_lsp(args: &[&str], cwd: &Path) -> Output {
    Command::new(common::server_binary()).args(args).current_dir(cwd).output().expect("kernel-lsp runs")
}

fn repo() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

#[test]
fn examples_are_reported_with_exit_1_and_a_summary() {
    let out = kernel_lsp(&["check", "examples/"], repo());
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    for code in ["KL001", "KL002", "KL003", "KL004", "KL005", "KL006", "KL007", "KL008", "KL009", "KL010"] {
        assert!(stdout.contains(&format!(": {code} ")), "{code} missing from:\n{stdout}");
    }
    assert!(stdout.contains("examples/gru/gru_python_loop.py:148:13: KL001"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("Found ") && l.ends_with(" errors.")), "{stdout}");
}

/// The few-shot kernels the prompts carry (prompts/examples/, the verified
/// kernels of examples/recurrent/) must stay clean: a rule change that flags
/// them would teach the LLM a mistake, or show the rule is wrong.
#[test]
fn every_prompt_example_passes_check_with_no_diagnostics() {
    let out = kernel_lsp(&["check", "--format", "json", "prompts/"], repo());
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(out.status.code(), Some(0), "{doc:#}");
    assert_eq!(doc["diagnostics"].as_array().map(Vec::len), Some(0), "{doc:#}");
    let persistent: Vec<&str> = doc["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["persistent"] == true)
        .map(|k| k["name"].as_str().unwrap())
        .collect();
    for kernel in ["gru_wavefront_kernel", "gru_bidir_layer_kernel", "lstm_wavefront_kernel"] {
        assert!(persistent.contains(&kernel), "{kernel} is not classified persistent: {persistent:?}");
    }
}

#[test]
fn json_output_has_diagnostics_and_kernel_classification() {
    let out = kernel_lsp(
        &["check", "--format", "json", "examples/gru/gru_persistent.py", "examples/gru/gru_python_loop.py"],
        repo(),
    );
    assert_eq!(out.status.code(), Some(1));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let diags = doc["diagnostics"].as_array().unwrap();
    let kl001 = diags.iter().find(|d| d["code"] == "KL001").expect("KL001");
    for key in ["file", "code", "name", "severity", "line", "column", "end_line", "end_column", "message", "fix"] {
        assert!(kl001.get(key).is_some(), "missing {key}: {kl001}");
    }
    assert_eq!(kl001["name"], "python-time-loop-launch");
    assert_eq!(kl001["line"], 148);
    assert!(kl001["message"].as_str().unwrap().contains("2 launches per step × seq_len steps × num_layers layers"));
    let kernels = doc["kernels"].as_array().unwrap();
    let persistent = kernels.iter().find(|k| k["name"] == "gru_persistent_kernel").unwrap();
    assert_eq!(persistent["persistent"], true);
    let cell = kernels.iter().find(|k| k["name"] == "gru_cell_kernel").unwrap();
    assert_eq!(cell["persistent"], false);
}

#[test]
fn select_ignore_and_target_gpu() {
    let only_kl006 = kernel_lsp(&["check", "--select", "KL006", "--format", "json", "examples/"], repo());
    let doc: Value = serde_json::from_slice(&only_kl006.stdout).unwrap();
    let codes: Vec<&str> = doc["diagnostics"].as_array().unwrap().iter().map(|d| d["code"].as_str().unwrap()).collect();
    assert!(!codes.is_empty() && codes.iter().all(|c| *c == "KL006"), "{codes:?}");
    let none = kernel_lsp(&["check", "--ignore", "KL0,KL1", "examples/"], repo());
    assert_eq!(none.status.code(), Some(0), "{}", String::from_utf8_lossy(&none.stdout));
    let bad_gpu = kernel_lsp(&["check", "--target-gpu", "gtx9000", "examples/"], repo());
    assert_eq!(bad_gpu.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad_gpu.stderr).contains("unknown target GPU `gtx9000`"));
}

#[test]
fn bad_input_gives_a_clear_error_and_the_other_files_are_still_checked() {
    let dir = common::temp_workspace("check-bad-input");
    std::fs::write(dir.join("binary.py"), [0xff, 0xfe, 0x00, 0x41, 0x80]).unwrap();
    std::fs::write(
        dir.join("broken.py"),
        "import triton\nimport triton.language as tl\n@triton.jit\ndef k(x:\n    y = tl.tanh(x)\n",
    )
    .unwrap();
    let out = kernel_lsp(&["check", "binary.py", "broken.py", "missing.py"], &dir);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("binary.py: not UTF-8 text"), "{stderr}");
    assert!(stderr.contains("missing.py:"), "{stderr}");
    // The broken file is still analysed as far as it parses, and says where it does not.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("broken.py:5:9: KL005"), "{stdout}");
    assert!(stdout.contains("broken.py:4:6: KL900 syntax error: `(` is never closed"), "{stdout}");
    assert_eq!(stdout.lines().last(), Some("2 files could not be checked."), "{stdout}");
}

fn stdout_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr_of(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A typo in `--select` used to turn every rule off and print "All checks passed!".
#[test]
fn unknown_rule_codes_on_the_command_line_are_an_error_that_lists_the_valid_ones() {
    for args in [
        &["check", "--select", "BOGUS", "examples/"][..],
        &["check", "--select", "KL001,KL0X", "examples/"],
        &["check", "--ignore", "KL099", "examples/"],
        &["check", "--select", "KL9", "examples/"],
    ] {
        let out = kernel_lsp(args, repo());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stdout_of(&out));
        let stderr = stderr_of(&out);
        let bad = args[2].split(',').next_back().unwrap();
        let key = args[1];
        assert!(stderr.contains(&format!("unknown rule selector `{bad}` in `{key}`")), "{args:?}: {stderr}");
        assert!(stderr.contains("KL001, KL002, KL003, KL004, KL005, KL006, KL007, KL008, KL009, KL010"), "{stderr}");
        assert!(!stdout_of(&out).contains("All checks passed!"), "{args:?}");
    }
    // Ruff-style prefixes keep working: every rule fires on the examples.
    for selector in ["ALL", "KL", "KL0"] {
        let out = kernel_lsp(&["check", "--select", selector, "examples/"], repo());
        assert_eq!(out.status.code(), Some(1), "{selector}");
        let stdout = stdout_of(&out);
        for code in ["KL001", "KL005", "KL010"] {
            assert!(stdout.contains(&format!(": {code} ")), "{selector}: {code} missing");
        }
    }
    let none = kernel_lsp(&["check", "--ignore", "ALL", "examples/tanh_activation/candidate_tl_tanh.py"], repo());
    assert_eq!(none.status.code(), Some(0), "{}", stdout_of(&none));
}

#[test]
fn unknown_rule_codes_in_the_configuration_are_an_error() {
    let dir = common::temp_workspace("check-config-codes");
    std::fs::copy(repo().join("examples/tanh_activation/candidate_fixed.py"), dir.join("k.py")).unwrap();
    std::fs::write(dir.join("kernel-lsp.toml"), "select = [\"BOGUS\"]\n").unwrap();
    let out = kernel_lsp(&["check", "k.py"], &dir);
    assert_eq!(out.status.code(), Some(2), "{}", stdout_of(&out));
    let stderr = stderr_of(&out);
    assert!(
        stderr.contains("kernel-lsp.toml") && stderr.contains("unknown rule selector `BOGUS` in `select`"),
        "{stderr}"
    );
    assert!(stderr.contains("KL010"), "{stderr}");
    assert_eq!(stdout_of(&out).lines().last(), Some("1 file could not be checked."));

    std::fs::remove_file(dir.join("kernel-lsp.toml")).unwrap();
    std::fs::write(dir.join("pyproject.toml"), "[tool.kernel-lsp]\nignore = [\"KL08\"]\n").unwrap();
    let out = kernel_lsp(&["check", "--format", "json", "k.py"], &dir);
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(doc["errors"][0]["file"], "k.py", "{doc:#}");
    let message = doc["errors"][0]["message"].as_str().unwrap();
    assert!(message.contains("pyproject.toml") && message.contains("`KL08` in `ignore`"), "{message}");

    std::fs::write(dir.join("pyproject.toml"), "[tool.kernel-lsp]\nselect = [\"KL00\"]\nignore = [\"ALL\"]\n").unwrap();
    assert_eq!(kernel_lsp(&["check", "k.py"], &dir).status.code(), Some(0));
}

/// The last line is green only when every requested file was read, parsed and clean.
#[test]
fn no_green_summary_after_a_file_could_not_be_checked() {
    let dir = common::temp_workspace("check-no-false-green");
    std::fs::copy(repo().join("examples/tanh_activation/candidate_fixed.py"), dir.join("clean.py")).unwrap();
    std::fs::write(dir.join("latin1.py"), b"# caf\xe9\nx = 1\n").unwrap();
    let clean = kernel_lsp(&["check", "clean.py"], &dir);
    assert_eq!((clean.status.code(), stdout_of(&clean).as_str()), (Some(0), "All checks passed!\n"));

    let out = kernel_lsp(&["check", "clean.py", "missing.py", "latin1.py"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout_of(&out), "2 files could not be checked.\n");
    let stderr = stderr_of(&out);
    assert!(stderr.contains("missing.py: No such file or directory"), "{stderr}");
    assert!(stderr.contains("latin1.py: not UTF-8 text (byte 5)"), "{stderr}");

    // An invalid kernel-lsp.toml: the file under it is not checked, and that is said.
    let sub = dir.join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::copy(dir.join("clean.py"), sub.join("k.py")).unwrap();
    std::fs::write(sub.join("kernel-lsp.toml"), "target-gpu = \"h100\"\nnot a key\n").unwrap();
    let out = kernel_lsp(&["check", "clean.py", "sub"], &dir);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(stdout_of(&out), "1 file could not be checked.\n");
    assert!(stderr_of(&out).contains("invalid configuration in"), "{}", stderr_of(&out));
}

#[test]
fn a_directory_without_python_files_is_not_a_clean_run() {
    let dir = common::temp_workspace("check-no-files");
    std::fs::create_dir_all(dir.join("empty")).unwrap();
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(dir.join("notes/readme.txt"), "no python here\n").unwrap();
    for path in ["empty", "notes"] {
        let out = kernel_lsp(&["check", path], &dir);
        assert_eq!(out.status.code(), Some(2), "{path}");
        let stdout = stdout_of(&out);
        assert!(stdout.starts_with("No Python files found"), "{path}: {stdout}");
        assert!(!stdout.contains("All checks passed!"), "{path}");
    }
    let out = kernel_lsp(&["check", "--format", "json", "empty"], &dir);
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    assert_eq!(doc["errors"][0]["file"], Value::Null, "{doc:#}");
    assert!(doc["errors"][0]["message"].as_str().unwrap().starts_with("No Python files found"), "{doc:#}");
}

#[test]
fn a_file_that_does_not_parse_gets_a_syntax_error_at_its_position() {
    let dir = common::temp_workspace("check-syntax");
    std::fs::write(dir.join("k.py"), "def k(x_ptr, N").unwrap();
    let out = kernel_lsp(&["check", "k.py"], &dir);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout_of(&out), "k.py:1:6: KL900 syntax error: `(` is never closed\nFound 1 error.\n");
    // Not a rule: selecting other rules does not hide it.
    let out = kernel_lsp(&["check", "--select", "KL001", "k.py"], &dir);
    assert_eq!(out.status.code(), Some(1), "{}", stdout_of(&out));
}

/// Pipelines read one JSON object: files that could not be checked are in
/// `errors`, syntax errors are diagnostics with their place.
#[test]
fn json_output_carries_errors_and_syntax_errors() {
    let dir = common::temp_workspace("check-json-errors");
    std::fs::write(dir.join("binary.py"), [0xff, 0xfe, 0x00]).unwrap();
    std::fs::write(dir.join("broken.py"), "import triton\n\nx = [1,\ny = 2\n").unwrap();
    let out = kernel_lsp(&["check", "--format", "json", "binary.py", "missing.py", "broken.py"], &dir);
    assert_eq!(out.status.code(), Some(2));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
    let errors = doc["errors"].as_array().expect("errors array");
    let files: Vec<&str> = errors.iter().map(|e| e["file"].as_str().unwrap()).collect();
    assert_eq!(files, ["missing.py", "binary.py"], "{doc:#}");
    assert!(errors[0]["message"].as_str().unwrap().contains("No such file or directory"), "{doc:#}");
    assert!(errors[1]["message"].as_str().unwrap().contains("not UTF-8 text"), "{doc:#}");
    let diags = doc["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 1, "{doc:#}");
    let d = &diags[0];
    assert_eq!(
        (d["file"].as_str(), d["code"].as_str(), d["name"].as_str()),
        (Some("broken.py"), Some("KL900"), Some("syntax-error"))
    );
    assert_eq!((d["line"].as_u64(), d["column"].as_u64(), d["severity"].as_str()), (Some(3), Some(5), Some("error")));
    // A clean run has an empty errors array, so pipelines can rely on the key.
    let clean = kernel_lsp(&["check", "--format", "json", "examples/tanh_activation/candidate_fixed.py"], repo());
    let doc: Value = serde_json::from_slice(&clean.stdout).unwrap();
    assert_eq!(doc["errors"], serde_json::json!([]));
}

#[test]
fn fix_applies_safe_fixes_and_unsafe_fixes_needs_the_flag() {
    let dir = common::temp_workspace("check-fix");
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, n):\n    offs = tl.arange(0, n)\n    tl.store(x_ptr + offs, tl.tanh(tl.load(x_ptr + offs)))\n";
    std::fs::write(dir.join("k.py"), src).unwrap();
    let safe = kernel_lsp(&["check", "--fix", "k.py"], &dir);
    assert_eq!(safe.status.code(), Some(1), "KL004 needs review, so it stays");
    let said = String::from_utf8_lossy(&safe.stdout);
    assert!(
        said.contains("[review] 1 more fixable with `kernel-lsp check --fix --unsafe-fixes`"),
        "the way to the review fix is said: {said}"
    );
    let after = std::fs::read_to_string(dir.join("k.py")).unwrap();
    assert!(after.contains("(2 * tl.sigmoid(2 * (tl.load(x_ptr + offs))) - 1)"), "{after}");
    assert!(after.contains("def k(x_ptr, n):"), "{after}");
    let all = kernel_lsp(&["check", "--fix", "--unsafe-fixes", "k.py"], &dir);
    assert_eq!(all.status.code(), Some(0), "{}", String::from_utf8_lossy(&all.stdout));
    let after = std::fs::read_to_string(dir.join("k.py")).unwrap();
    assert!(after.contains("def k(x_ptr, n: tl.constexpr):"), "{after}");
}

#[test]
fn rules_lists_and_explains() {
    let list = kernel_lsp(&["rules"], repo());
    assert_eq!(list.status.code(), Some(0));
    let text = String::from_utf8_lossy(&list.stdout);
    assert_eq!(text.lines().count(), kernel_lsp::rules::RULES.len(), "one line per rule: {text}");
    assert!(text.contains("KL101  pytorch-fallback") && text.contains("KL108  untrusted-side-effect"), "{text}");
    assert!(text.contains("KL003  cross-program-recurrence"));
    let doc = kernel_lsp(&["rules", "KL003"], repo());
    let doc = String::from_utf8_lossy(&doc.stdout);
    for heading in ["## What it does", "## Why is this bad?", "## Example", "## Use instead"] {
        assert!(doc.contains(heading), "{heading} missing");
    }
    let by_name = kernel_lsp(&["rules", "serialized-tile-loop"], repo());
    assert!(String::from_utf8_lossy(&by_name.stdout).starts_with("# KL002"));
    assert_eq!(kernel_lsp(&["rules", "KL999"], repo()).status.code(), Some(2));
}

/// A directory is checked on several threads; the output must be what a
/// sequential run prints, byte for byte, and what checking each file on its
/// own reports, in the same (sorted) order. The first file is the largest, so
/// on several threads the others finish before it.
#[test]
fn a_directory_checked_in_parallel_prints_what_a_sequential_run_prints() {
    let dir = common::temp_workspace("check-parallel");
    std::fs::create_dir_all(dir.join("pkg/sub")).unwrap();
    let mut names = Vec::new();
    for (i, lines) in [3_000, 120, 400, 60, 900, 200, 60, 1_500, 300, 100].into_iter().enumerate() {
        let name = if i % 3 == 2 { format!("pkg/sub/k{i:02}.py") } else { format!("pkg/k{i:02}.py") };
        // Distinct text per file: the block numbering starts at a different kernel.
        let text = kernel_lsp_tests::generate(lines).text.replace("_0(", &format!("_{i}x("));
        std::fs::write(dir.join(&name), text).unwrap();
        names.push(name);
    }
    std::fs::write(dir.join("pkg/broken.py"), "import triton\n@triton.jit\ndef k(x:\n").unwrap();
    std::fs::write(dir.join("pkg/sub/binary.py"), [0xff, 0xfe, 0x00]).unwrap();
    let run = |threads: &str, args: &[&str]| {
        Command::new(common::server_binary())
            .args(args)
            .current_dir(&dir)
            .env("KERNEL_LSP_THREADS", threads)
            .output()
            .expect("kernel-lsp runs")
    };
    for format in ["text", "json"] {
        let sequential = run("1", &["check", "--format", format, "pkg"]);
        assert_eq!(sequential.status.code(), Some(2), "{}", stderr_of(&sequential));
        assert!(stderr_of(&sequential).contains("binary.py: not UTF-8 text"), "{}", stderr_of(&sequential));
        for threads in ["2", "4", "16"] {
            let parallel = run(threads, &["check", "--format", format, "pkg"]);
            assert_eq!(parallel.status.code(), sequential.status.code());
            assert_eq!(stdout_of(&parallel), stdout_of(&sequential), "{format} on {threads} threads");
            assert_eq!(stderr_of(&parallel), stderr_of(&sequential), "{format} on {threads} threads");
        }
    }
    // The same findings as checking each file alone, file by file in sorted order.
    let whole: Value = serde_json::from_slice(&run("4", &["check", "--format", "json", "pkg"]).stdout).unwrap();
    let mut paths: Vec<String> = names.iter().cloned().chain(["pkg/broken.py".to_string()]).collect();
    paths.sort();
    let mut one_by_one = Vec::new();
    for p in &paths {
        let doc: Value = serde_json::from_slice(&run("1", &["check", "--format", "json", p]).stdout).unwrap();
        one_by_one.extend(doc["diagnostics"].as_array().unwrap().iter().cloned());
    }
    let diagnostics = whole["diagnostics"].as_array().unwrap();
    assert!(diagnostics.len() > 100, "{} diagnostics", diagnostics.len());
    assert_eq!(diagnostics, &one_by_one);
}

fn test_python() -> String {
    std::env::var("KERNEL_LSP_TEST_PYTHON").unwrap_or_else(|_| repo().join(".venv/bin/python").display().to_string())
}

const KL005_KERNEL: &str = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n    tl.store(x_ptr + offs, tl.fork_exp(x) + tl.tanh(x))\n";

/// KL005 asks the configured Python's Triton (a fixed script of ours, no user
/// code): a name that Triton has but the bundled list lacks is accepted, and
/// the message names the installed version. The bundled list matches this
/// Triton (3.9), so the interpreter is the real one with a `sitecustomize`
/// that adds `tl.fork_exp`, as a fork or a newer release would.
#[test]
fn kl005_checks_against_the_configured_pythons_triton() {
    let python = test_python();
    let version =
        Command::new(&python).args(["-c", "import triton; print(triton.__version__)"]).output().expect("python runs");
    let version = String::from_utf8_lossy(&version.stdout).trim().to_string();
    assert!(!version.is_empty(), "{python} has no triton");
    let dir = common::temp_workspace("check-kl005-python");
    std::fs::create_dir_all(dir.join("site")).unwrap();
    std::fs::write(dir.join("site/sitecustomize.py"), "import triton.language as tl\ntl.fork_exp = tl.exp\n").unwrap();
    let wrapper = dir.join("python.sh");
    std::fs::write(
        &wrapper,
        format!("#!/bin/sh\nPYTHONPATH='{}' exec '{python}' \"$@\"\n", dir.join("site").display()),
    )
    .unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&wrapper).status().unwrap();
    std::fs::write(dir.join("k.py"), KL005_KERNEL).unwrap();

    // Without a Python: the bundled list, which lacks `fork_exp`.
    let out = kernel_lsp(&["check", "--select", "KL005", "k.py"], &dir);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(stdout.contains("has no `fork_exp` (checked against the bundled list, Triton"), "{stdout}");
    assert!(stdout.contains("has no `tanh` (checked against the bundled list, Triton"), "{stdout}");

    // With it: `fork_exp` is known, `tanh` is still missing, and the message names the installed version.
    std::fs::write(dir.join("kernel-lsp.toml"), format!("python = '{}'\n", wrapper.display())).unwrap();
    let out = kernel_lsp(&["check", "--select", "KL005", "k.py"], &dir);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(!stdout.contains("fork_exp"), "{stdout}");
    let expected = format!("`triton.language` {version} has no `tanh` (the Triton of `{}`)", wrapper.display());
    assert!(stdout.contains(&expected), "{expected} missing from:\n{stdout}");
    assert_eq!(out.status.code(), Some(1), "{stdout}");
}

/// A configured Python that cannot be asked: the bundled list, and both the
/// message and stderr say so.
#[test]
fn kl005_falls_back_to_the_bundled_list_when_the_python_is_missing() {
    let dir = common::temp_workspace("check-kl005-missing-python");
    std::fs::write(dir.join("k.py"), KL005_KERNEL).unwrap();
    std::fs::write(dir.join("kernel-lsp.toml"), "python = '/nonexistent/bin/python3'\n").unwrap();
    let out = kernel_lsp(&["check", "--select", "KL005", "k.py"], &dir);
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(
        stdout.contains("has no `tanh` (checked against the bundled list, Triton")
            && stdout.contains("`/nonexistent/bin/python3` could not be started"),
        "{stdout}"
    );
    assert!(stdout.contains("has no `fork_exp`"), "{stdout}");
    assert!(
        stderr.contains("KL005 checks against the bundled list") && stderr.contains("/nonexistent/bin/python3"),
        "{stderr}"
    );
}

/// Piped into `head`, the CLI ends quietly (no panic, no error message) when
/// the reader goes away; rule codes are case-insensitive everywhere.
#[test]
fn a_closed_pipe_ends_quietly_and_codes_are_case_insensitive() {
    let bin = common::server_binary();
    let dir = common::temp_workspace("check-pipe");
    let examples = repo().join("examples").display().to_string();
    for args in ["rules".to_string(), format!("check --format json {examples}"), format!("check {examples}")] {
        // The reader has gone before kernel-lsp writes: every write meets a closed pipe.
        let script = format!("{{ sleep 0.3; \"$0\" {args}; echo \"rc=$?\" >&2; }} | true");
        let out =
            Command::new("bash").args(["-c", &script, &bin.display().to_string()]).current_dir(&dir).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("panicked") && !err.contains("error"), "`{args} | true`: {err}");
        assert!(err.contains("rc=141"), "ended by SIGPIPE, as `cat file | head` does: {err}");
    }
    std::fs::write(dir.join("k.py"), "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, tl.tanh(tl.load(x_ptr)))\n").unwrap();
    let lower = kernel_lsp(&["check", "--select", "kl005", "k.py"], &dir);
    let upper = kernel_lsp(&["check", "--select", "KL005", "k.py"], &dir);
    assert_eq!(lower.status.code(), Some(1), "{}", String::from_utf8_lossy(&lower.stderr));
    assert_eq!(lower.stdout, upper.stdout);
    let ignored = kernel_lsp(&["check", "--ignore", "kl005", "--select", "kl005", "k.py"], &dir);
    assert_eq!(ignored.status.code(), Some(0), "{}", String::from_utf8_lossy(&ignored.stdout));
}
