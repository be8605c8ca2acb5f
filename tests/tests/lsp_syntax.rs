//! End-to-end: a document that stops parsing while it is typed gets a KL900
//! syntax-error diagnostic where it breaks, the rest of the file is still
//! analysed, and the error goes when the code parses again.

mod common;

use common::{codes, LspClient, FIXTURE};
use serde_json::{json, Value};

const URI: &str = "file:///tmp/kernel-lsp-e2e/syntax.py";

fn range(sl: u64, sc: u64, el: u64, ec: u64) -> Value {
    json!({"start": {"line": sl, "character": sc}, "end": {"line": el, "character": ec}})
}

#[test]
fn typing_an_unfinished_def_reports_kl900_and_keeps_the_other_diagnostics() {
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.open(URI, FIXTURE);
    assert_eq!(codes(&c.diagnostics(URI, 1)), vec!["KL005", "KL004"]);
    // Type a new kernel header at the end of the file, one keystroke at a time.
    let typed = "\ndef k(x_ptr, N";
    let mut version = 1;
    let (mut line, mut col) = (20u64, 0u64);
    for ch in typed.chars() {
        version += 1;
        c.change(URI, version, json!([{"range": range(line, col, line, col), "text": ch.to_string()}]));
        if ch == '\n' {
            (line, col) = (line + 1, 0);
        } else {
            col += 1;
        }
    }
    let diags = c.diagnostics(URI, version);
    assert_eq!(codes(&diags), vec!["KL005", "KL004", "KL900"], "{diags:#?}");
    // At once, tree-sitter's word: a warning until Python's own parser (the compile worker)
    // confirms it after the pause, or is found unable to (then tree-sitter's error stands).
    let kl900 = diags.iter().find(|d| d["code"] == "KL900").unwrap();
    assert_eq!(kl900["range"], range(21, 5, 21, 6), "at the `(` that is never closed");
    assert_eq!(
        kl900["message"],
        "syntax error: `(` is never closed (Python's parser has not confirmed it yet) [syntax-error]"
    );
    assert_eq!(kl900["severity"], 2);
    let settled = c.wait_for(
        |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == URI
                && m["params"]["version"] == json!(version)
                && m["params"]["diagnostics"]
                    .as_array()
                    .is_some_and(|d| d.iter().any(|d| d["code"] == "KL900" && d["severity"] == 1))
        },
        "KL900 confirmed, or the compile worker found unable to run",
    );
    let diags = settled["params"]["diagnostics"].as_array().unwrap();
    let kl900 = diags.iter().find(|d| d["code"] == "KL900").unwrap();
    assert_eq!(kl900["range"], range(21, 5, 21, 6), "at the `(` that is never closed");
    assert_eq!(kl900["message"], "syntax error: `(` is never closed [syntax-error]");
    assert_eq!(kl900["source"], "kernel-lsp");

    // Neither suppressible nor a rule to explain: no "Ignore KL900" or "Explain KL900" action.
    let actions = c.call(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": URI}, "range": kl900["range"], "context": {"diagnostics": [kl900]}}),
    );
    let titles: Vec<&str> = actions.as_array().unwrap().iter().filter_map(|a| a["title"].as_str()).collect();
    assert!(titles.iter().all(|t| !t.contains("KL900")), "{titles:?}");

    // Closing the parameter list and giving the def a body: the syntax error goes.
    version += 1;
    c.change(URI, version, json!([{"range": range(21, col, 21, col), "text": "):\n    pass\n"}]));
    assert_eq!(codes(&c.diagnostics(URI, version)), vec!["KL005", "KL004"]);
    assert!(c.shutdown().success());
}

/// Typing a decorator above a launcher in the middle of a file of kernels,
/// one keystroke at a time: while its bracket is open the statement stops at
/// the next line (`def` cannot continue it), so every kernel keeps its
/// finding in every publication (from the `(` on), with one KL900 at the
/// innermost open bracket. (tree-sitter alone reads the rest of the file into the open
/// bracket: the findings of every kernel after it went until it was closed.)
#[test]
fn a_decorator_typed_mid_file_leaves_the_kernels_after_it_analysed() {
    let generated = kernel_lsp_tests::generate(400);
    let text = generated.text.as_str();
    let uri = "file:///tmp/kernel-lsp-e2e/decorator.py";
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.open(uri, text);
    let kl005 = |diags: &[Value]| diags.iter().filter(|d| d["code"] == "KL005").count();
    let opened = c.diagnostics(uri, 1);
    let kernels = kl005(&opened);
    assert!(kernels >= 8, "a finding in each kernel: {}", kernels);
    let launchers: Vec<usize> =
        text.lines().enumerate().filter(|(_, l)| l.starts_with("def run_cell_")).map(|(i, _)| i).collect();
    let line = launchers[launchers.len() / 2] as u64;
    // A fresh line above the launcher.
    c.change(uri, 2, json!([{"range": range(line, 0, line, 0), "text": "\n"}]));
    let typed = "@triton.autotune(configs=[";
    let mut open: Vec<u64> = Vec::new();
    for (k, ch) in typed.chars().enumerate() {
        let version = 3 + k as i64;
        let col = k as u64;
        c.change(uri, version, json!([{"range": range(line, col, line, col), "text": ch.to_string()}]));
        if matches!(ch, '(' | '[') {
            open.push(col);
        }
        let diags = c.diagnostics(uri, version);
        // Before the bracket (`@triton.`) the error is tree-sitter's own recovery's.
        let Some(&at) = open.last() else { continue };
        assert_eq!(kl005(&diags), kernels, "after {:?}: {diags:#?}", &typed[..=k]);
        let kl900: Vec<&Value> = diags.iter().filter(|d| d["code"] == "KL900").collect();
        assert_eq!(kl900.len(), 1, "after {:?}: {diags:#?}", &typed[..=k]);
        assert_eq!(kl900[0]["range"], range(line, at, line, at + 1), "after {:?}", &typed[..=k]);
    }
    assert!(c.shutdown().success());
}
