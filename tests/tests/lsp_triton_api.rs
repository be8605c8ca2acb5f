//! End-to-end over stdio with the real binary: what the server knows of
//! Triton's API and of the file's kernels: hover (`tl.*` signature, docs,
//! link and version; a kernel's signature and launch sites; a launch's grid
//! and programs), signature help in `tl.*` calls, helper calls and launches,
//! and completion (`tl.` members with docs and snippets, keyword arguments,
//! what a kernel body may use). With a configured Python, the API and its
//! version come from that Python's Triton.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{file_uri, temp_workspace, LspClient};
use serde_json::{json, Value};

const SRC: &str = r#"import torch
import triton
import triton.language as tl

N = 4096


@triton.jit
def scale(x, factor):
    return x * factor


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    y = tl.load(y_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, scale(x + y, 2.0), mask=offs < n)


def add(x, y, out):
    add_kernel[(triton.cdiv(N, 256),)](x, y, out, N, BLOCK=256)
"#;

fn pos(line: u64, character: u64) -> Value {
    json!({"line": line, "character": character})
}

/// Line and column (UTF-16 = bytes here) of `needle`'s `nth` occurrence, plus `delta` columns.
fn at(needle: &str, nth: usize, delta: u64) -> Value {
    let off = SRC.match_indices(needle).nth(nth).unwrap_or_else(|| panic!("no {needle}")).0;
    let line = SRC[..off].matches('\n').count() as u64;
    let col = (off - SRC[..off].rfind('\n').map_or(0, |i| i + 1)) as u64;
    pos(line, col + delta)
}

fn capabilities() -> Value {
    let mut caps = LspClient::capabilities(&["utf-16"]);
    caps["textDocument"]["completion"] = json!({"completionItem": {"snippetSupport": true}});
    caps["textDocument"]["signatureHelp"] =
        json!({"signatureInformation": {"parameterInformation": {"labelOffsetSupport": true}}});
    caps
}

fn start(uri: &str) -> LspClient {
    let mut c = LspClient::start();
    let init = c.initialize_with(capabilities(), Value::Null, None);
    let sig = &init["capabilities"]["signatureHelpProvider"]["triggerCharacters"];
    assert_eq!(sig, &json!(["(", ","]), "{init}");
    c.open(uri, SRC);
    c.diagnostics(uri, 1);
    c
}

fn hover(c: &mut LspClient, uri: &str, position: Value) -> String {
    let h = c.call("textDocument/hover", json!({"textDocument": {"uri": uri}, "position": position}));
    h["contents"]["value"].as_str().unwrap_or_default().to_string()
}

fn active_label(help: &Value) -> String {
    let sig = &help["signatures"][0];
    let i = help["activeParameter"].as_u64().expect("an active parameter") as usize;
    let label: Vec<u16> = sig["label"].as_str().expect("label").encode_utf16().collect();
    let [a, b] = [0, 1].map(|k| sig["parameters"][i]["label"][k].as_u64().expect("offsets") as usize);
    String::from_utf16_lossy(&label[a..b])
}

#[test]
fn hover_knows_tl_names_kernels_and_launches() {
    let uri = "file:///tmp/kernel-lsp-api/add.py";
    let mut c = start(uri);
    let load = hover(&mut c, uri, at("tl.load", 0, 4));
    assert!(load.contains("tl.load(pointer, mask=None, other=None"), "{load}");
    assert!(load.contains("Return a tensor of data whose values are loaded from memory"), "{load}");
    assert!(load.contains("https://triton-lang.org/main/python-api/generated/triton.language.load.html"), "{load}");
    assert!(load.contains("Triton 3."), "the version: {load}");
    let pid = hover(&mut c, uri, at("tl.program_id", 0, 5));
    assert!(pid.contains("tl.program_id(axis)"), "{pid}");

    let kernel = hover(&mut c, uri, at("def add_kernel", 0, 6));
    assert!(kernel.contains("def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr)"), "{kernel}");
    assert!(kernel.contains("constexpr: `BLOCK`") && kernel.contains("launched at line 23"), "{kernel}");
    let helper = hover(&mut c, uri, at("scale(x + y", 0, 1));
    assert!(helper.contains("def scale(x, factor)") && helper.contains("called at line 19"), "{helper}");
    let launch = hover(&mut c, uri, at("add_kernel[", 0, 2));
    assert!(launch.contains("**Launch** of `add_kernel`") && launch.contains(": 16 programs"), "{launch}");
    assert!(c.shutdown().success());
}

#[test]
fn signature_help_in_tl_calls_helper_calls_and_launches() {
    let uri = "file:///tmp/kernel-lsp-api/sig.py";
    let mut c = start(uri);
    let help = |c: &mut LspClient, p: Value| {
        c.call("textDocument/signatureHelp", json!({"textDocument": {"uri": uri}, "position": p}))
    };
    let h = help(&mut c, at("other=0.0", 0, 6));
    assert!(h["signatures"][0]["label"].as_str().unwrap_or_default().starts_with("tl.load(pointer"), "{h}");
    assert_eq!(active_label(&h), "other=None");
    let h = help(&mut c, at("mask=offs < n)", 0, 0));
    assert_eq!(active_label(&h), "mask=None", "{h}");
    let h = help(&mut c, at(", 2.0)", 0, 2));
    assert_eq!(h["signatures"][0]["label"], "scale(x, factor)");
    assert_eq!(active_label(&h), "factor");
    let h = help(&mut c, at("BLOCK=256", 0, 6));
    assert_eq!(h["signatures"][0]["label"], "add_kernel[grid](x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr)");
    assert_eq!(active_label(&h), "BLOCK: tl.constexpr");
    assert!(h["signatures"][0]["parameters"][4]["documentation"]["value"].as_str().unwrap_or("").contains("constexpr"));
    // Outside any call: nothing.
    assert_eq!(help(&mut c, pos(4, 2)), Value::Null);
    assert!(c.shutdown().success());
}

#[test]
fn completion_of_tl_members_keywords_and_kernel_names() {
    let uri = "file:///tmp/kernel-lsp-api/complete.py";
    let mut c = start(uri);
    // Type `tl.` on a new line of the kernel body, then `tl.load(p, ` for keywords.
    let line = at("    tl.store", 0, 0)["line"].as_u64().expect("line");
    let edit = |text: &str| json!([{"range": {"start": pos(line, 0), "end": pos(line, 0)}, "text": text}]);
    c.change(uri, 2, edit("    z = tl.\n"));
    let items = c.call("textDocument/completion", json!({"textDocument": {"uri": uri}, "position": pos(line, 11)}));
    let items = items.as_array().expect("items");
    let load = items.iter().find(|i| i["label"] == "load").expect("tl.load offered");
    assert_eq!(load["insertText"], "load(${1:pointer})$0");
    assert_eq!(load["insertTextFormat"], 2, "a snippet");
    assert!(load["documentation"]["value"].as_str().unwrap_or("").contains("triton.language.load.html"), "{load}");
    assert!(!items.iter().any(|i| i["label"] == "tanh"), "tl.tanh does not exist");

    c.change(
        uri,
        3,
        json!([{"range": {"start": pos(line, 0), "end": pos(line + 1, 0)}, "text": "    z = tl.dot(x, y, \n"}]),
    );
    let items = c.call("textDocument/completion", json!({"textDocument": {"uri": uri}, "position": pos(line, 21)}));
    let labels: Vec<&str> = items.as_array().expect("items").iter().filter_map(|i| i["label"].as_str()).collect();
    assert!(labels.contains(&"acc=") && labels.contains(&"out_dtype="), "{labels:?}");
    assert!(labels.contains(&"BLOCK") && labels.contains(&"offs") && labels.contains(&"range"), "{labels:?}");
    assert!(!labels.contains(&"torch") && !labels.contains(&"add"), "host names in a kernel: {labels:?}");
    assert!(c.shutdown().success());
}

fn python() -> String {
    std::env::var("KERNEL_LSP_TEST_PYTHON")
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/bin/python").display().to_string())
}

/// With `python` configured, hover reads that Python's Triton: the version
/// and the source named are the interpreter's, not the embedded database's.
#[test]
fn hover_reads_the_configured_pythons_triton() {
    let python = python();
    if !Path::new(&python).exists() {
        eprintln!("no Python at {python}: skipped");
        return;
    }
    let dir = temp_workspace("api-python");
    // The compiler in the loop is not what this test is about: it stays off.
    std::fs::write(dir.join("kernel-lsp.toml"), format!("python = {python:?}\n\n[compile]\nenabled = false\n"))
        .expect("config");
    let path = dir.join("k.py");
    std::fs::write(&path, SRC).expect("write");
    let uri = file_uri(&path);
    let mut c = LspClient::start_command(
        std::process::Command::new(common::server_binary()).arg("serve").env("XDG_CACHE_HOME", dir.join("cache")),
    );
    c.initialize_with(capabilities(), Value::Null, Some(&dir));
    c.open(&uri, SRC);
    c.diagnostics(&uri, 1);
    let deadline = Instant::now() + Duration::from_secs(90);
    let text = loop {
        let text = hover(&mut c, &uri, at("tl.load", 0, 4));
        if text.contains(&format!("of `{python}`")) || Instant::now() > deadline {
            break text;
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    assert!(text.contains(&format!("of `{python}`")) && text.contains("tl.load(pointer"), "{text}");
    let cached = std::fs::read_dir(dir.join("cache/kernel-lsp/triton-api")).expect("the cache").count();
    assert_eq!(cached, 1, "one database per Triton version");
    assert!(c.shutdown().success());
}
