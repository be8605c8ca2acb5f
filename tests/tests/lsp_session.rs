//! End-to-end: the real `kernel-lsp serve` binary, driven over stdio the way
//! an editor drives it.

mod common;

use std::time::Duration;

use common::{apply_text_edits, codes, file_uri, temp_workspace, LspClient, FIXTURE};
use serde_json::{json, Value};

const URI: &str = "file:///tmp/kernel-lsp-e2e/act.py";

fn find<'a>(diags: &'a [Value], code: &str) -> &'a Value {
    diags.iter().find(|d| d["code"] == code).unwrap_or_else(|| panic!("no {code} in {diags:?}"))
}

fn pos(line: u64, character: u64) -> Value {
    json!({"line": line, "character": character})
}

fn range(sl: u64, sc: u64, el: u64, ec: u64) -> Value {
    json!({"start": pos(sl, sc), "end": pos(el, ec)})
}

#[test]
fn initialize_negotiates_the_position_encoding() {
    let mut c = LspClient::start();
    let caps = c.initialize(&["utf-8", "utf-16"]);
    assert_eq!(caps["capabilities"]["positionEncoding"], "utf-8");
    assert_eq!(caps["capabilities"]["textDocumentSync"]["change"], 2, "incremental sync");
    let commands = caps["capabilities"]["executeCommandProvider"]["commands"].clone();
    for name in [
        "kernel-lsp.benchmark",
        "kernel-lsp.rewrite",
        "kernel-lsp.history",
        "kernel-lsp.timeline",
        "kernel-lsp.explain",
        "kernel-lsp.fixAll",
    ] {
        assert!(commands.as_array().unwrap().contains(&json!(name)), "{name} missing from {commands}");
    }
    assert!(c.shutdown().success());

    let mut c = LspClient::start();
    let caps = c.initialize(&["utf-16"]);
    assert_eq!(caps["capabilities"]["positionEncoding"], "utf-16");
    assert!(c.shutdown().success());

    let mut c = LspClient::start();
    let caps = c.initialize_with(json!({}), Value::Null, None);
    assert_eq!(caps["capabilities"]["positionEncoding"], "utf-16");
    assert!(c.shutdown().success());
}

/// A finding's other places (`relatedInformation`) go only to a client that
/// declares it takes them; the finding itself is the same for both.
#[test]
fn related_information_only_for_a_client_that_takes_it() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/gru/gru_python_loop.py");
    let text = std::fs::read_to_string(&root).expect("the GRU example");
    let mut published = Vec::new();
    for takes in [true, false] {
        let mut c = LspClient::start();
        let mut caps = LspClient::capabilities(&["utf-16"]);
        caps["textDocument"]["publishDiagnostics"]["relatedInformation"] = json!(takes);
        c.initialize_with(caps, Value::Null, None);
        c.open(URI, &text);
        let diags = c.diagnostics(URI, 1);
        let kl001 = find(&diags, "KL001").clone();
        assert_eq!(kl001["relatedInformation"].is_array(), takes, "relatedInformation: {kl001}");
        if takes {
            assert!(!kl001["relatedInformation"].as_array().unwrap().is_empty());
        }
        published.push(diags);
        assert!(c.shutdown().success());
    }
    let without = |d: &[Value]| -> Vec<Value> {
        d.iter()
            .cloned()
            .map(|mut v| {
                v.as_object_mut().unwrap().remove("relatedInformation");
                v
            })
            .collect()
    };
    assert_eq!(without(&published[0]), without(&published[1]));
}

#[test]
fn open_publishes_kl005_and_kl004_with_the_version() {
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.open(URI, FIXTURE);
    let diags = c.diagnostics(URI, 1);
    assert_eq!(codes(&diags), vec!["KL005", "KL004"]);
    let kl005 = find(&diags, "KL005");
    // `    tl.store(y_ptr + offs, tl.tanh(x), mask=offs < n)` is line 7.
    assert_eq!(kl005["range"], range(7, 27, 7, 34));
    assert_eq!(kl005["source"], "kernel-lsp");
    assert_eq!(kl005["severity"], 1);
    // The fix is not carried in the publication: a code action reads it from the analysis.
    assert!(kl005.get("data").is_none(), "{kl005}");
    let actions = c.call(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": URI}, "range": kl005["range"], "context": {"diagnostics": [kl005], "only": ["quickfix"]}}),
    );
    let fix = actions.as_array().expect("actions").iter().find(|a| a["isPreferred"] == true).expect("the safe fix");
    assert_eq!(fix["edit"]["changes"][URI][0]["range"]["start"], pos(7, 27));
    assert!(c.shutdown().success());
}

#[test]
fn edits_update_the_diagnostics() {
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.open(URI, FIXTURE);
    assert_eq!(codes(&c.diagnostics(URI, 1)), vec!["KL005", "KL004"]);
    // Type `sigmoid` over `tanh`, one character at a time.
    c.change(URI, 2, json!([{"range": range(7, 30, 7, 34), "text": ""}]));
    for (i, ch) in "sigmoid".chars().enumerate() {
        let col = 30 + i as u64;
        c.change(URI, 3 + i as i64, json!([{"range": range(7, col, 7, col), "text": ch.to_string()}]));
    }
    let diags = c.diagnostics(URI, 9);
    assert_eq!(codes(&diags), vec!["KL004"]);
    // Make H a constexpr: several changes in one notification.
    c.change(
        URI,
        10,
        json!([
            {"range": range(11, 17, 11, 17), "text": ": tl"},
            {"range": range(11, 21, 11, 21), "text": ".constexpr"},
        ]),
    );
    assert_eq!(codes(&c.diagnostics(URI, 10)), Vec::<String>::new());
    // A full-text change brings everything back.
    c.change(URI, 11, json!([{"text": FIXTURE}]));
    assert_eq!(codes(&c.diagnostics(URI, 11)), vec!["KL005", "KL004"]);
    assert!(c.shutdown().success());
}

/// Where a document's analyses are quick, an edit's diagnostics go out
/// before the server answers the message that follows the edit: the
/// analysis ran on the thread that serves the protocol, not on a thread
/// woken for it (`server/did_change.rs`).
#[test]
fn a_quick_analysis_is_published_before_the_next_message_is_answered() {
    // "Quick" is up to a second here: a debug build on a busy machine can
    // take more than the 3 ms the server goes by.
    let mut c = LspClient::start_command(
        std::process::Command::new(common::server_binary()).arg("serve").env("KERNEL_LSP_ANALYSE_HERE_MS", "1000"),
    );
    c.initialize(&["utf-16"]);
    c.open(URI, FIXTURE);
    c.diagnostics(URI, 1);
    // The first edit's analysis tells the server how long this document
    // takes; it runs on the analysis thread, which then has to finish the
    // job (it frees the old result after publishing).
    c.change(URI, 2, json!([{"range": range(0, 0, 0, 0), "text": "#\n"}]));
    c.diagnostics(URI, 2);
    std::thread::sleep(Duration::from_millis(200));
    for version in 3..23 {
        c.change(URI, version, json!([{"range": range(0, 0, 0, 0), "text": "#\n"}]));
        // Answered at once (no such method), without reading any document.
        let id = c.send_request("kernel-lsp/noSuchRequest", json!({}));
        let answer = c.response(id);
        assert!(answer.get("error").is_some(), "{answer}");
        let published =
            |m: &Value| m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == json!(version);
        assert!(c.was_read(published), "version {version}'s diagnostics came after the answer to the next request");
        assert_eq!(codes(&c.diagnostics(URI, version)), vec!["KL005", "KL004"]);
    }
    assert!(c.shutdown().success());
}

#[test]
fn non_ascii_columns_follow_the_negotiated_encoding() {
    let text =
        FIXTURE.replace("    tl.store(y_ptr + offs, tl.tanh(x)", "    s = \"é𝄞\"; tl.store(y_ptr + offs, tl.tanh(x)");
    // `s = "é𝄞"; ` is 11 UTF-16 units and 14 UTF-8 bytes.
    for (encoding, start) in [("utf-16", 27 + 11), ("utf-8", 27 + 14)] {
        let mut c = LspClient::start();
        let caps = c.initialize(&[encoding]);
        assert_eq!(caps["capabilities"]["positionEncoding"], encoding);
        c.open(URI, &text);
        let diags = c.diagnostics(URI, 1);
        assert_eq!(find(&diags, "KL005")["range"], range(7, start, 7, start + 7), "{encoding}");
        // An edit after the non-ASCII text lands where the client meant it.
        c.change(URI, 2, json!([{"range": range(7, start + 3, 7, start + 7), "text": "sigmoid"}]));
        assert!(!codes(&c.diagnostics(URI, 2)).contains(&"KL005".to_string()), "{encoding}");
        assert!(c.shutdown().success());
    }
}

#[test]
fn code_action_fix_applies_and_clears_the_diagnostic() {
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.open(URI, FIXTURE);
    let diags = c.diagnostics(URI, 1);
    let kl005 = find(&diags, "KL005").clone();
    let actions = c.call(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": URI}, "range": kl005["range"], "context": {"diagnostics": [kl005]}}),
    );
    let actions = actions.as_array().expect("actions");
    let titles: Vec<&str> = actions.iter().filter_map(|a| a["title"].as_str()).collect();
    assert!(titles.contains(&"Explain KL005"), "{titles:?}");
    assert!(titles.contains(&"Ignore KL005 on this line"), "{titles:?}");
    let fix =
        actions.iter().find(|a| a["kind"] == "quickfix" && a["isPreferred"] == true).expect("a preferred quick fix");
    let edits = fix["edit"]["changes"][URI].as_array().expect("edits for the document").clone();
    assert!(edits[0]["newText"].as_str().unwrap().contains("sigmoid"), "{edits:?}");
    let fixed = apply_text_edits(FIXTURE, &edits, "utf-16");
    assert!(!fixed.contains("tl.tanh"));
    c.change(URI, 2, json!([{"text": fixed}]));
    assert_eq!(codes(&c.diagnostics(URI, 2)), vec!["KL004"]);
    assert!(c.shutdown().success());
}

#[test]
fn quick_fixes_asked_right_after_an_edit_read_that_edits_analysis() {
    // Large enough that the fresh analysis an added import forces is still
    // running when the request comes: the answer must wait for it, not read
    // the analysis of the previous text, whose byte ranges no longer fit.
    let big = format!("{FIXTURE}\n{}", kernel_lsp_tests::generate(3000).text);
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.open(URI, &big);
    assert!(codes(&c.diagnostics(URI, 1)).contains(&"KL005".to_string()));
    // Two lines on top: the KL005 of `act` moves from line 7 to line 9.
    let edited = format!("import os\nimport sys\n{big}");
    c.change(URI, 2, json!([{"text": edited}]));
    let kl005 = json!({"range": range(9, 27, 9, 34), "severity": 1, "code": "KL005", "source": "kernel-lsp", "message": "tanh"});
    let actions = c.call(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": URI}, "range": kl005["range"], "context": {"diagnostics": [kl005], "only": ["quickfix"]}}),
    );
    let fix = actions
        .as_array()
        .expect("actions")
        .iter()
        .find(|a| a["isPreferred"] == true)
        .unwrap_or_else(|| panic!("no fix for the edited text: {actions:#}"));
    let edits = fix["edit"]["changes"][URI].as_array().expect("edits").clone();
    let fixed = apply_text_edits(&edited, &edits, "utf-16");
    let line9 = fixed.lines().nth(9).expect("line 9");
    assert_eq!(line9, "    tl.store(y_ptr + offs, (2 * tl.sigmoid(2 * x) - 1), mask=offs < n)");
    assert_eq!(fixed.lines().count(), edited.lines().count());
    // Code lens, asked as soon as the text changes again, sit on the kernels of the new text.
    let edited_lens = format!("import glob\n{edited}");
    c.change(URI, 3, json!([{"text": edited_lens}]));
    let lenses = c.call("textDocument/codeLens", json!({"textDocument": {"uri": URI}}));
    let act = edited_lens.lines().position(|l| l.starts_with("def act(")).expect("def act") as u64;
    let lines: Vec<u64> =
        lenses.as_array().expect("lenses").iter().filter_map(|l| l["range"]["start"]["line"].as_u64()).collect();
    assert!(lines.contains(&act), "a lens on `def act` at line {act}: {lines:?}");
    let defs: Vec<u64> = edited_lens
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("def ") || l.starts_with("class ModelNew"))
        .map(|(i, _)| i as u64)
        .collect();
    assert!(lines.iter().all(|l| defs.contains(l)), "every lens on a `def` or `class ModelNew` line of the new text");
    // Fix-all, asked as soon as the text changes again, also reads the new analysis.
    let edited2 = format!("import re\n{edited_lens}");
    c.change(URI, 4, json!([{"text": edited2}]));
    let all = c.call(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": URI}, "range": range(0, 0, 0, 0), "context": {"diagnostics": [], "only": ["source.fixAll"]}}),
    );
    let edits = all[0]["edit"]["changes"][URI].as_array().expect("fix-all edits").clone();
    let fixed = apply_text_edits(&edited2, &edits, "utf-16");
    assert!(!fixed.contains("tl.tanh"), "every safe KL005 fix applied at its place");
    assert!(fixed.contains("    tl.store(y_ptr + offs, (2 * tl.sigmoid(2 * x) - 1), mask=offs < n)\n"));
    assert!(c.shutdown().success());
}

#[test]
fn suppression_comment_silences_the_line() {
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.open(URI, FIXTURE);
    let kl005 = find(&c.diagnostics(URI, 1), "KL005").clone();
    let actions = c.call(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": URI}, "range": kl005["range"], "context": {"diagnostics": [kl005], "only": ["quickfix"]}}),
    );
    let ignore = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "Ignore KL005 on this line")
        .expect("suppression action")
        .clone();
    let edits = ignore["edit"]["changes"][URI].as_array().unwrap().clone();
    let text = apply_text_edits(FIXTURE, &edits, "utf-16");
    assert!(text.contains("tl.store(y_ptr + offs, tl.tanh(x), mask=offs < n)  # kernel-lsp: ignore[KL005]\n"));
    c.change(URI, 2, json!([{"text": text}]));
    assert_eq!(codes(&c.diagnostics(URI, 2)), vec!["KL004"]);
    assert!(c.shutdown().success());
}

#[test]
fn fix_all_applies_only_safe_fixes() {
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.open(URI, FIXTURE);
    c.diagnostics(URI, 1);
    let actions = c.call(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": URI}, "range": range(0, 0, 0, 0), "context": {"diagnostics": [], "only": ["source.fixAll"]}}),
    );
    let action = &actions.as_array().unwrap()[0];
    assert_eq!(action["kind"], "source.fixAll.kernel-lsp");
    let edits = action["edit"]["changes"][URI].as_array().unwrap().clone();
    let fixed = apply_text_edits(FIXTURE, &edits, "utf-16");
    assert!(!fixed.contains("tl.tanh"), "the safe KL005 fix is applied");
    assert!(fixed.contains("def fill(x_ptr, H):"), "the KL004 fix needs review and is not applied");

    // The command does the same through workspace/applyEdit, versioned.
    let result = c.call("workspace/executeCommand", json!({"command": "kernel-lsp.fixAll", "arguments": [URI]}));
    assert_eq!(result, json!(true));
    let applied = c.applied_edits.pop().expect("the server asked to apply an edit");
    let doc_edit = &applied["edit"]["documentChanges"][0];
    assert_eq!(doc_edit["textDocument"], json!({"uri": URI, "version": 1}));
    let fixed_by_command = apply_text_edits(FIXTURE, doc_edit["edits"].as_array().unwrap(), "utf-16");
    assert_eq!(fixed_by_command, fixed);
    assert!(c.shutdown().success());
}

#[test]
fn configuration_changes_republish_and_invalid_ones_are_refused() {
    let mut c = LspClient::start();
    c.initialize_with(LspClient::capabilities(&["utf-16"]), json!({"kernel-lsp": {"ignore": ["KL004"]}}), None);
    c.open(URI, FIXTURE);
    assert_eq!(codes(&c.diagnostics(URI, 1)), vec!["KL005"], "initialization options apply");

    c.notify("workspace/didChangeConfiguration", json!({"settings": {"kernel-lsp": {"ignore": ["KL005"]}}}));
    assert_eq!(codes(&c.diagnostics(URI, 1)), vec!["KL004"], "re-published after the change");

    c.notify("workspace/didChangeConfiguration", json!({"settings": {"select": ["KL00"], "ignore": []}}));
    assert_eq!(codes(&c.diagnostics(URI, 1)), vec!["KL005", "KL004"], "settings at the top level");

    c.notify("workspace/didChangeConfiguration", json!({"settings": {"kernel-lsp": {"target-gpu": "voodoo3"}}}));
    let shown = c.wait_for(|m| m["method"] == "window/showMessage", "an error message");
    assert_eq!(shown["params"]["type"], 1);
    assert!(shown["params"]["message"].as_str().unwrap().contains("voodoo3"));
    // The previous settings stay: an edit still reports both.
    c.change(URI, 2, json!([{"range": range(0, 0, 0, 0), "text": "\n"}]));
    assert_eq!(codes(&c.diagnostics(URI, 2)), vec!["KL005", "KL004"]);

    // A null payload makes the server pull `workspace/configuration`.
    c.configuration = json!({"ignore": ["KL00"]});
    c.notify("workspace/didChangeConfiguration", json!({"settings": null}));
    assert_eq!(codes(&c.diagnostics(URI, 2)), Vec::<String>::new());
    assert!(c.shutdown().success());
}

#[test]
fn project_config_is_discovered_per_file() {
    let ws = temp_workspace("config");
    std::fs::create_dir_all(ws.join("a")).unwrap();
    std::fs::create_dir_all(ws.join("b")).unwrap();
    std::fs::write(ws.join("a/kernel-lsp.toml"), "ignore = [\"KL005\"]\n").unwrap();
    std::fs::write(ws.join("b/pyproject.toml"), "[project]\nname = \"b\"\n\n[tool.kernel-lsp]\nignore = [\"KL004\"]\n")
        .unwrap();
    let (a, b) = (file_uri(&ws.join("a/k.py")), file_uri(&ws.join("b/k.py")));
    let mut c = LspClient::start();
    c.initialize_with(LspClient::capabilities(&["utf-16"]), Value::Null, Some(&ws));
    c.open(&a, FIXTURE);
    c.open(&b, FIXTURE);
    assert_eq!(codes(&c.diagnostics(&a, 1)), vec!["KL004"]);
    assert_eq!(codes(&c.diagnostics(&b, 1)), vec!["KL005"]);
    // Editing the project file and telling the server re-reads it.
    std::fs::write(ws.join("a/kernel-lsp.toml"), "ignore = []\n").unwrap();
    c.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": file_uri(&ws.join("a/kernel-lsp.toml")), "type": 2}]}),
    );
    assert_eq!(codes(&c.diagnostics(&a, 1)), vec!["KL005", "KL004"]);
    // An invalid project file is reported, not fatal.
    std::fs::write(ws.join("a/kernel-lsp.toml"), "target-gpu = 3\n").unwrap();
    c.notify("workspace/didChangeWatchedFiles", json!({"changes": []}));
    let shown = c.wait_for(|m| m["method"] == "window/showMessage", "an error about the project file");
    assert!(shown["params"]["message"].as_str().unwrap().contains("kernel-lsp.toml"), "{shown}");
    assert!(c.shutdown().success());
    let _ = std::fs::remove_dir_all(&ws);
}

#[test]
fn pull_diagnostics_when_the_client_asks_for_them() {
    let mut caps = LspClient::capabilities(&["utf-16"]);
    caps["textDocument"]["diagnostic"] = json!({"dynamicRegistration": false});
    let mut c = LspClient::start();
    let init = c.initialize_with(caps, Value::Null, None);
    assert_eq!(init["capabilities"]["diagnosticProvider"]["identifier"], "kernel-lsp");
    c.open(URI, FIXTURE);
    let report = c.call("textDocument/diagnostic", json!({"textDocument": {"uri": URI}}));
    assert_eq!(report["kind"], "full");
    assert_eq!(codes(report["items"].as_array().unwrap()), vec!["KL005", "KL004"]);
    c.change(URI, 2, json!([{"range": range(7, 27, 7, 34), "text": "tl.sigmoid"}]));
    let report = c.call("textDocument/diagnostic", json!({"textDocument": {"uri": URI}}));
    assert_eq!(codes(report["items"].as_array().unwrap()), vec!["KL004"]);
    let pushed = c.drain(Duration::from_millis(200));
    assert!(
        pushed.iter().all(|m| m["method"] != "textDocument/publishDiagnostics"),
        "pull clients get no pushes: {pushed:?}"
    );
    assert!(c.shutdown().success());
}

#[test]
fn hover_lens_and_commands() {
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.open(URI, FIXTURE);
    c.diagnostics(URI, 1);

    let hover = c.call("textDocument/hover", json!({"textDocument": {"uri": URI}, "position": pos(7, 31)}));
    let text = hover["contents"]["value"].as_str().unwrap();
    assert!(text.contains("KL005") && text.contains("has no `tanh`"), "{text}");
    assert_eq!(text.matches("KL005").count(), 1, "KL005 named once: {text}");
    let hover = c.call("textDocument/hover", json!({"textDocument": {"uri": URI}, "position": pos(6, 12)}));
    let load = hover["contents"]["value"].as_str().unwrap();
    assert!(load.contains("tl.load(pointer, mask=None") && load.contains("triton.language.load.html"), "{hover}");
    assert!(load.contains("Triton 3."), "the version: {hover}");

    let lenses = c.call("textDocument/codeLens", json!({"textDocument": {"uri": URI}}));
    let lenses = lenses.as_array().unwrap();
    let bench = lenses.iter().find(|l| l["command"]["command"] == "kernel-lsp.benchmark").expect("benchmark lens");
    assert_eq!(bench["command"]["title"], "▶ Benchmark vs reference");
    assert_eq!(bench["command"]["arguments"], json!([URI]));
    assert_eq!(bench["range"]["start"]["line"], 16, "on `class ModelNew`");
    assert!(lenses.iter().any(|l| l["range"]["start"]["line"] == 4), "a lens on `def act`: {lenses:?}");

    let hints = c.call("textDocument/inlayHint", json!({"textDocument": {"uri": URI}, "range": range(0, 0, 30, 0)}));
    assert_eq!(hints, json!([]), "no hints before a benchmark");

    let doc = c.call("workspace/executeCommand", json!({"command": "kernel-lsp.explain", "arguments": ["KL005"]}));
    assert!(doc.as_str().unwrap().contains("unknown-triton-function"), "{doc}");
    let doc = c.call("workspace/executeCommand", json!({"command": "kernel-lsp.explain", "arguments": ["KL903"]}));
    assert!(doc.as_str().unwrap().contains("mismatch"), "{doc}");
    let unknown =
        c.request("workspace/executeCommand", json!({"command": "kernel-lsp.explain", "arguments": ["KL999"]}));
    assert_eq!(unknown["error"]["code"], -32602);

    let rewrite = c.request(
        "workspace/executeCommand",
        json!({"command": "kernel-lsp.rewrite", "arguments": [URI, "make-persistent"]}),
    );
    assert_eq!(rewrite["error"]["code"], -32602, "{rewrite}");
    assert!(
        rewrite["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown action \"make-persistent\"; known: persistent, grid-2d"),
        "{rewrite}"
    );

    let bench = c.request(
        "workspace/executeCommand",
        json!({"command": "kernel-lsp.benchmark", "arguments": ["untitled:Untitled-1"]}),
    );
    assert_eq!(bench["error"]["code"], -32602, "{bench}");
    assert!(c.shutdown().success());
}

#[test]
fn history_and_timeline_tables() {
    let ws = temp_workspace("history");
    std::fs::create_dir_all(ws.join(".kernel-lsp")).unwrap();
    let file = ws.join("kernels").join("gru.py");
    std::fs::write(
        ws.join(".kernel-lsp/history.jsonl"),
        format!(
            "{}\n{}\n",
            json!({"time": "2025-06-01T10:00:00Z", "stage": "bench", "speedup": 1.62, "new_ms": 29.9, "candidate": file.display().to_string()}),
            json!({"time": "2025-06-01T10:05:00Z", "stage": "rewrite", "score": 1.8, "latency": 41000, "problem": "gru"}),
        ),
    )
    .unwrap();
    std::fs::write(ws.join("kernel-lsp.toml"), "").unwrap();
    std::fs::write(
        ws.join(".kernel-lsp/timeline.jsonl"),
        format!(
            "{}\n{}\n",
            json!({"time": "2025-06-01T10:05:00Z", "run": "1-2", "file": "kernels/gru.py", "action": "persistent", "stage": "gate", "candidate": 1, "attempt": 0, "score": "rejected", "latency_ms": 41000, "problem": "KL001", "tokens": null}),
            json!({"time": "2025-06-01T10:06:00Z", "run": "1-2", "file": "kernels/other.py", "action": "persistent", "stage": "pick", "candidate": null, "attempt": null, "score": "none", "latency_ms": 0, "problem": "", "tokens": null}),
        ),
    )
    .unwrap();
    let mut c = LspClient::start();
    c.initialize_with(LspClient::capabilities(&["utf-16"]), Value::Null, Some(&ws));
    let uri = file_uri(&file);
    let table = c.call("workspace/executeCommand", json!({"command": "kernel-lsp.history", "arguments": [uri]}));
    assert_eq!(
        table,
        "| time | stage | score | latency | problem |\n|---|---|---|---|---|\n| 2025-06-01T10:00:00Z | bench | 1.62x | 29.9 ms | gru.py |\n"
    );
    let timeline = c.call("workspace/executeCommand", json!({"command": "kernel-lsp.timeline", "arguments": [uri]}));
    let timeline = timeline.as_str().unwrap();
    assert!(
        timeline.starts_with("| time ")
            && timeline
                .ends_with("| 2025-06-01 10:05:00Z | gate  | 1    | 0   | rejected | 41.0 s  | -      | KL001   |\n"),
        "{timeline}"
    );
    assert!(!timeline.contains("other.py") && !timeline.contains("| pick"), "{timeline}");
    assert!(c.shutdown().success());
    let _ = std::fs::remove_dir_all(&ws);
}

#[test]
fn malformed_and_out_of_order_input_never_kills_the_server() {
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    // A change before the document is open.
    c.change(URI, 5, json!([{"range": range(0, 0, 0, 0), "text": "x"}]));
    // Invalid JSON gets a parse error.
    c.send_raw(&common::frame(b"{\"jsonrpc\": \"2.0\", \"id\": 99, \"method\": "));
    let error = c.wait_for(|m| m["error"]["code"] == -32700, "a parse error");
    assert_eq!(error["id"], Value::Null);
    // Unknown request and notification.
    assert_eq!(c.request("kernel-lsp/noSuchMethod", json!({}))["error"]["code"], -32601);
    c.notify("kernel-lsp/noSuchNotification", json!({"x": 1}));
    // Bad params for a request and for notifications.
    assert_eq!(c.request("textDocument/hover", json!({"textDocument": 3}))["error"]["code"], -32602);
    c.notify("textDocument/didOpen", json!({"textDocument": {"uri": 7}}));
    c.notify("textDocument/didChange", json!({"contentChanges": "nope"}));
    c.request("workspace/executeCommand", json!({"command": "kernel-lsp.fixAll", "arguments": [42]}));
    c.request("workspace/executeCommand", json!({"command": "kernel-lsp.history"}));
    // Ranges outside the document, and reversed, are clamped.
    c.open(URI, FIXTURE);
    c.diagnostics(URI, 1);
    c.change(URI, 2, json!([{"range": range(999, 0, 1000, 5), "text": "\n# end\n"}]));
    assert_eq!(codes(&c.diagnostics(URI, 2)), vec!["KL005", "KL004"]);
    c.change(URI, 3, json!([{"range": range(7, 34, 7, 30), "text": "sigmoid"}]));
    assert_eq!(codes(&c.diagnostics(URI, 3)), vec!["KL004"], "a reversed range is applied as if in order");
    c.change(URI, 4, json!([{"range": range(3, 4000000000u64, 3, 4000000000u64), "text": ""}]));
    c.diagnostics(URI, 4);
    // Requests on documents that are not open.
    let none = c.call("textDocument/codeLens", json!({"textDocument": {"uri": "file:///nowhere.py"}}));
    assert_eq!(none, Value::Null);
    // Closing clears the diagnostics; the server still answers.
    c.notify("textDocument/didClose", json!({"textDocument": {"uri": URI}}));
    let cleared = c.wait_for(
        |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["diagnostics"] == json!([])
                && m["params"].get("version").is_none_or(Value::is_null)
        },
        "cleared diagnostics",
    );
    assert_eq!(cleared["params"]["uri"], URI);
    assert!(c.shutdown().success());
}

#[test]
fn exit_without_shutdown_is_an_error_exit() {
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.notify("exit", Value::Null);
    assert_eq!(c.wait_exit().code(), Some(1));
}

#[test]
fn requests_before_initialize_are_refused() {
    let mut c = LspClient::start();
    let early = c.request("textDocument/hover", json!({"textDocument": {"uri": URI}, "position": pos(0, 0)}));
    assert_eq!(early["error"]["code"], -32002);
    c.initialize(&["utf-16"]);
    assert!(c.shutdown().success());
}

/// The server asks the configured Python for its `triton.language` names in a
/// background task: the document is published at once against the bundled
/// list, then again against the installed Triton when the answer comes. The
/// interpreter is the real one (`KERNEL_LSP_TEST_PYTHON`) with a
/// `sitecustomize` that adds `tl.fork_exp`, a name the bundled list lacks.
#[test]
fn kl005_uses_the_configured_pythons_triton_once_it_answers() {
    let python = std::env::var("KERNEL_LSP_TEST_PYTHON")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../.venv/bin/python").to_string());
    let ws = temp_workspace("kl005-python");
    std::fs::create_dir_all(ws.join("site")).unwrap();
    std::fs::write(ws.join("site/sitecustomize.py"), "import triton.language as tl\ntl.fork_exp = tl.exp\n").unwrap();
    let wrapper = ws.join("python.sh");
    std::fs::write(&wrapper, format!("#!/bin/sh\nPYTHONPATH='{}' exec '{python}' \"$@\"\n", ws.join("site").display()))
        .unwrap();
    std::process::Command::new("chmod").arg("+x").arg(&wrapper).status().unwrap();
    std::fs::write(ws.join("kernel-lsp.toml"), format!("python = '{}'\n", wrapper.display())).unwrap();
    let text = "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n    tl.store(x_ptr + offs, tl.fork_exp(x) + tl.tanh(x))\n";
    let uri = file_uri(&ws.join("k.py"));
    let mut c = LspClient::start();
    c.initialize_with(LspClient::capabilities(&["utf-16"]), Value::Null, Some(&ws));
    c.open(&uri, text);
    let messages = |diags: &[Value]| -> Vec<String> {
        diags.iter().filter(|d| d["code"] == "KL005").map(|d| d["message"].as_str().unwrap_or("").to_string()).collect()
    };
    let first = messages(&c.diagnostics(&uri, 1));
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first.iter().all(|m| m.contains("checked against the bundled list")), "{first:?}");
    let later = c.wait_for(
        |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["uri"] == uri.as_str()
                && m["params"]["diagnostics"].as_array().is_some_and(|d| {
                    d.iter().any(|d| d["message"].as_str().is_some_and(|s| s.contains("(the Triton of")))
                })
        },
        "diagnostics against the installed Triton",
    );
    let later = messages(later["params"]["diagnostics"].as_array().unwrap());
    assert_eq!(later.len(), 1, "{later:?}");
    assert!(
        later[0].contains("has no `tanh` (the Triton of") && later[0].contains(&wrapper.display().to_string()),
        "{later:?}"
    );
    assert!(c.shutdown().success());
    let _ = std::fs::remove_dir_all(&ws);
}

/// A configured Python that cannot be asked: KL005 stays on the bundled list,
/// and the republished message says why.
#[test]
fn kl005_falls_back_to_the_bundled_list_when_the_servers_python_is_missing() {
    let ws = temp_workspace("kl005-missing-python");
    std::fs::write(ws.join("kernel-lsp.toml"), "python = '/nonexistent/bin/python3'\n").unwrap();
    let uri = file_uri(&ws.join("k.py"));
    let mut c = LspClient::start();
    c.initialize_with(LspClient::capabilities(&["utf-16"]), Value::Null, Some(&ws));
    c.open(&uri, FIXTURE);
    assert_eq!(codes(&c.diagnostics(&uri, 1)), vec!["KL005", "KL004"]);
    let later = c.wait_for(
        |m| {
            m["method"] == "textDocument/publishDiagnostics"
                && m["params"]["diagnostics"].as_array().is_some_and(|d| {
                    d.iter().any(|d| d["message"].as_str().is_some_and(|s| s.contains("could not be started")))
                })
        },
        "KL005 saying the Python could not be asked",
    );
    let kl005 = find(later["params"]["diagnostics"].as_array().unwrap(), "KL005");
    let message = kl005["message"].as_str().unwrap();
    assert!(
        message.contains("checked against the bundled list, Triton") && message.contains("/nonexistent/bin/python3"),
        "{message}"
    );
    assert!(c.shutdown().success());
    let _ = std::fs::remove_dir_all(&ws);
}

/// A benchmark's Cancel stops the run whether it reaches the server after the
/// request (the usual order) or before it: the transport handles messages
/// concurrently, so a cancel sent just after its request may be seen first.
/// The interpreter here never answers, so only the cancel can end the runs.
#[test]
fn benchmark_cancel_stops_the_run_in_either_order() {
    use std::os::unix::fs::PermissionsExt;
    let ws = temp_workspace("bench-cancel");
    let python = ws.join("python-that-hangs");
    std::fs::write(&python, "#!/bin/sh\nexec sleep 120\n").unwrap();
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(ws.join("kernel-lsp.toml"), format!("python = {:?}\n", python.display().to_string())).unwrap();
    let file = ws.join("candidate.py");
    std::fs::write(&file, FIXTURE).unwrap();
    let uri = file_uri(&file);
    let mut c = LspClient::start();
    c.initialize_with(LspClient::capabilities(&["utf-16"]), Value::Null, Some(&ws));
    c.open(&uri, FIXTURE);

    let bench = |token: &str| json!({"command": "kernel-lsp.benchmark", "arguments": [uri], "workDoneToken": token});
    // The cancel first, then its request.
    c.notify("window/workDoneProgress/cancel", json!({"token": "early"}));
    let t0 = std::time::Instant::now();
    let early = c.request("workspace/executeCommand", bench("early"));
    assert_eq!(early["error"]["code"], -32800, "{early}");
    assert!(t0.elapsed() < Duration::from_secs(10), "the early-cancelled run ended by itself: {:?}", t0.elapsed());

    // The request first; cancelled once its progress has begun.
    let id = c.send_request("workspace/executeCommand", bench("late"));
    c.wait_for(
        |m| m["method"] == "$/progress" && m["params"]["token"] == "late" && m["params"]["value"]["kind"] == "begin",
        "the late run's progress",
    );
    c.notify("window/workDoneProgress/cancel", json!({"token": "late"}));
    let late = c.response(id);
    assert_eq!(late["error"]["code"], -32800, "{late}");
    let end = c.wait_for(
        |m| m["method"] == "$/progress" && m["params"]["token"] == "late" && m["params"]["value"]["kind"] == "end",
        "the late run's end",
    );
    assert_eq!(end["params"]["value"]["message"], "cancelled", "{end}");

    // A third run is accepted: the cancelled ones are no longer "running".
    c.notify("window/workDoneProgress/cancel", json!({"token": "third"}));
    let third = c.request("workspace/executeCommand", bench("third"));
    assert_eq!(third["error"]["code"], -32800, "{third}");
    assert!(c.shutdown().success());
}
