//! The compiler in the editor, through a real LSP client over stdio with real
//! Triton on the CPU: static diagnostics first, then the compile error at its
//! line after the pause; an edit moves it; a newer edit cancels the older
//! compilation; the resources on hover of the kernel's name; without Triton,
//! one message and static diagnostics only.
//!
//! Needs a Python with triton: `KERNEL_LSP_TEST_PYTHON`, else the repo's `.venv`.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{file_uri, temp_workspace, LspClient};
use serde_json::{json, Value};

fn python() -> String {
    std::env::var("KERNEL_LSP_TEST_PYTHON")
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python").display().to_string())
}

const KERNELS: &str = r#"import torch
import triton
import triton.language as tl


@triton.jit
def clean_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@triton.jit
def loop_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(4):
        if i == 2:
            break
        acc += tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, acc, mask=offs < n)


def run():
    x = torch.zeros(128, device="cuda")
    clean_kernel[(1,)](x, x.numel(), BLOCK=128)
    loop_kernel[(1,)](x, x.numel(), BLOCK=128)
"#;

/// Line (0-based) of `break`, and of the load a later edit misspells.
const BREAK_LINE: u64 = 17;
const LOAD_LINE: u64 = 18;

fn start(name: &str, python: &str) -> (LspClient, String) {
    let dir = temp_workspace(&format!("lsp-compile-{name}"));
    std::fs::write(dir.join("kernel-lsp.toml"), format!("python = {python:?}\n\n[compile]\ndebounce-ms = 300\n"))
        .unwrap();
    let path = dir.join("kernels.py");
    std::fs::write(&path, KERNELS).unwrap();
    let mut client = LspClient::start();
    client.initialize_with(LspClient::capabilities(&["utf-16"]), Value::Null, Some(&dir));
    (client, file_uri(&path))
}

fn compile_errors(diags: &[Value]) -> Vec<&Value> {
    diags.iter().filter(|d| d["code"] == "KL901").collect()
}

/// The next publication for `uri` at `version` that holds a KL901.
fn compiled(client: &mut LspClient, uri: &str, version: i64) -> Vec<Value> {
    let msg = client.wait_for(
        |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri
                && m["params"]["version"] == json!(version)
                && m["params"]["diagnostics"].as_array().is_some_and(|d| d.iter().any(|d| d["code"] == "KL901"))
        },
        &format!("compile diagnostics for v{version}"),
    );
    msg["params"]["diagnostics"].as_array().cloned().unwrap_or_default()
}

#[test]
fn static_diagnostics_come_first_then_the_compile_error_at_its_line_and_an_edit_moves_it() {
    let (mut client, uri) = start("session", &python());
    let opened = Instant::now();
    client.open(&uri, KERNELS);
    let first = client.diagnostics(&uri, 1);
    let static_after = opened.elapsed();
    assert!(compile_errors(&first).is_empty(), "the static publication does not wait for the compiler: {first:#?}");
    let diags = compiled(&mut client, &uri, 1);
    let errors = compile_errors(&diags);
    assert_eq!(errors.len(), 1, "{diags:#?}");
    assert_eq!(errors[0]["range"]["start"], json!({"line": BREAK_LINE, "character": 12}));
    assert_eq!(errors[0]["severity"], 1, "an error: nothing was assumed");
    let message = errors[0]["message"].as_str().unwrap();
    assert!(message.contains("unsupported AST node type: Break") && message.contains("sm_90"), "{message}");
    assert!(static_after < opened.elapsed(), "static before compiled");

    // The resources of the clean kernel, on hover of its name (line 6, `def clean_kernel`).
    let hover = client
        .call("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": {"line": 6, "character": 6}}));
    let text = hover["contents"]["value"].as_str().unwrap_or("");
    assert!(text.contains("registers") && text.contains("sm_90") && text.contains("the launch on line 25"), "{text}");

    // A hint at the end of the clean kernel's `def` line; none for the kernel that does not compile.
    let hints = client.call(
        "textDocument/inlayHint",
        json!({"textDocument": {"uri": uri}, "range": {"start": {"line": 0, "character": 0}, "end": {"line": 30, "character": 0}}}),
    );
    let hints = hints.as_array().cloned().unwrap_or_default();
    assert_eq!(hints.len(), 1, "{hints:#?}");
    assert_eq!(hints[0]["position"]["line"], 6);
    let label = hints[0]["label"].as_str().unwrap_or("");
    assert!(label.starts_with("sm_90: ") && label.contains(" regs, 0 spills, 0 B shared"), "{label}");

    // Fix the `break`, misspell the load's mask: the error moves to the load.
    client.change(
        &uri,
        2,
        json!([
            {"range": {"start": {"line": LOAD_LINE, "character": 37}, "end": {"line": LOAD_LINE, "character": 41}}, "text": "msk"},
            {"range": {"start": {"line": BREAK_LINE, "character": 12}, "end": {"line": BREAK_LINE, "character": 17}}, "text": "pass"},
        ]),
    );
    let diags = compiled(&mut client, &uri, 2);
    let errors = compile_errors(&diags);
    assert_eq!(errors.len(), 1, "{diags:#?}");
    assert_eq!(errors[0]["range"]["start"]["line"], LOAD_LINE, "{diags:#?}");
    assert!(errors[0]["message"].as_str().unwrap().contains("msk"));
    client.shutdown();
}

#[test]
fn a_newer_edit_cancels_the_compilation_of_the_older_one() {
    let (mut client, uri) = start("cancel", &python());
    client.open(&uri, KERNELS);
    compiled(&mut client, &uri, 1);
    // Two edits within the pause: only the second is compiled.
    let comment = |v: i64| json!([{"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}, "text": format!("# v{v}\n")}]);
    client.change(&uri, 2, comment(2));
    client.change(&uri, 3, comment(3));
    let diags = compiled(&mut client, &uri, 3);
    assert_eq!(compile_errors(&diags)[0]["range"]["start"]["line"], BREAK_LINE + 2, "moved by the two lines");
    let seen = client.drain(Duration::from_millis(1500));
    let v2_compiled = seen.iter().any(|m| {
        m["params"]["version"] == 2
            && m["params"]["diagnostics"].as_array().is_some_and(|d| d.iter().any(|d| d["code"] == "KL901"))
    });
    assert!(!v2_compiled, "version 2 was compiled although version 3 came within the pause");
    client.shutdown();
}

#[test]
fn without_triton_one_message_says_so_and_static_diagnostics_remain() {
    let (mut client, uri) = start("nopython", "/nonexistent/python");
    client.open(&uri, KERNELS);
    let first = client.diagnostics(&uri, 1);
    assert!(compile_errors(&first).is_empty());
    let msg = client.wait_for(|m| m["method"] == "window/showMessage", "the notice");
    let text = msg["params"]["message"].as_str().unwrap();
    assert!(text.contains("not compiled") && text.contains("/nonexistent/python"), "{text}");
    assert_eq!(msg["params"]["type"], 2, "a warning");
    client.change(&uri, 2, json!([{"text": KERNELS.replace("def run", "def run_all")}]));
    let second = client.diagnostics(&uri, 2);
    assert!(compile_errors(&second).is_empty());
    let more = client.drain(Duration::from_millis(1000));
    assert!(!more.iter().any(|m| m["method"] == "window/showMessage"), "said once: {more:#?}");
    client.shutdown();
}

/// A KL011 block-shape finding is published at once; once the compiler fails
/// at the same line, the publication says the compiler confirms it.
#[test]
fn the_compiler_confirms_a_block_shape_mistake_at_its_line() {
    const SHAPES: &str = "import triton\nimport triton.language as tl\n\n\n@triton.jit\n\
                          def add_kernel(x_ptr, y_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    \
                          half = tl.arange(0, BLOCK // 2)\n    \
                          tl.store(x_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + half))\n\n\n\
                          def run(x, y):\n    add_kernel[(1,)](x, y, BLOCK=128)\n";
    let (mut client, uri) = start("kl011", &python());
    client.open(&uri, SHAPES);
    let kl011 = |diags: &[Value]| diags.iter().find(|d| d["code"] == "KL011").cloned().expect("a KL011");
    let first = kl011(&client.diagnostics(&uri, 1));
    let message = first["message"].as_str().unwrap();
    assert!(message.contains("[128] and [64]") && !message.contains("compiler"), "{message}");
    let diags = compiled(&mut client, &uri, 1);
    let confirmed = kl011(&diags);
    assert_eq!(confirmed["range"], first["range"]);
    let message = confirmed["message"].as_str().unwrap();
    assert!(message.contains("; the compiler reports an error on this line too"), "{message}");
    assert_eq!(compile_errors(&diags)[0]["range"]["start"]["line"], 8, "{diags:#?}");
    client.shutdown();
}

/// A Python that starts but has no Triton (here: without its site-packages):
/// the worker is asked to start before any file's jobs are made, so its
/// failure is said once and the files opened after it prepare nothing.
#[test]
fn a_python_without_triton_is_said_once_and_static_diagnostics_remain() {
    use std::os::unix::fs::PermissionsExt;
    let dir = temp_workspace("lsp-compile-no-triton");
    let python = dir.join("python-without-site");
    std::fs::write(&python, format!("#!/bin/sh\nexec {:?} -S \"$@\"\n", python_real())).unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (mut client, uri) = start("no-triton", &python.display().to_string());
    client.open(&uri, KERNELS);
    let first = client.diagnostics(&uri, 1);
    assert!(compile_errors(&first).is_empty());
    let msg = client.wait_for(|m| m["method"] == "window/showMessage", "the notice");
    let text = msg["params"]["message"].as_str().unwrap();
    assert!(text.contains("not compiled"), "{text}");
    assert_eq!(msg["params"]["type"], 2, "a warning");
    // A second file with kernels: nothing more is said, its static diagnostics come.
    let other = uri.replace("kernels.py", "more_kernels.py");
    client.open(&other, &KERNELS.replace("clean_kernel", "plain_kernel"));
    assert!(compile_errors(&client.diagnostics(&other, 1)).is_empty());
    let more = client.drain(Duration::from_millis(1500));
    assert!(!more.iter().any(|m| m["method"] == "window/showMessage"), "said once: {more:#?}");
    client.shutdown();
}

/// The interpreter behind `python()` (a venv's `python` is a link to it).
fn python_real() -> String {
    let out = std::process::Command::new(python())
        .args(["-c", "import sys; print(sys._base_executable)"])
        .output()
        .expect("the test Python runs");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}
