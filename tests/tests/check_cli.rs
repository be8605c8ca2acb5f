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
    // The broken file is still analysed as far as it parses.
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("broken.py:5:9: KL005"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn fix_applies_safe_fixes_and_unsafe_fixes_needs_the_flag() {
    let dir = common::temp_workspace("check-fix");
    let src = "import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(x_ptr, n):\n    offs = tl.arange(0, n)\n    tl.store(x_ptr + offs, tl.tanh(tl.load(x_ptr + offs)))\n";
    std::fs::write(dir.join("k.py"), src).unwrap();
    let safe = kernel_lsp(&["check", "--fix", "k.py"], &dir);
    assert_eq!(safe.status.code(), Some(1), "KL004 needs review, so it stays");
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
    assert_eq!(text.lines().count(), 11, "{text}");
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
