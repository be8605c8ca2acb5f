//! LLM rewrites through the language server: the real `kernel-lsp serve`, the
//! loopback chat-completions server (`llm_mock`) replaying recorded answers,
//! and the real harness on Triton's CPU interpreter with `examples/gru/` run
//! small (the command's options carry what `kernel-lsp rewrite --cpu --set`
//! takes on the command line).
//!
//! Needs a Python with torch and triton: `KERNEL_LSP_TEST_PYTHON`, else
//! `<repo>/.venv/bin/python`.

mod common;
#[allow(dead_code)]
mod llm_mock;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{file_uri, LspClient};
use llm_mock::{fixture, fixture_code, repo, MockLlm, Reply};
use serde_json::{json, Value};

const FILE: &str = "gru_python_loop.py";

fn python() -> String {
    std::env::var("KERNEL_LSP_TEST_PYTHON").unwrap_or_else(|_| repo().join(".venv/bin/python").display().to_string())
}

/// A project with the GRU example that launches per time step, its
/// reference, and a config pointing at the mock server.
fn project(name: &str, llm: &MockLlm) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kernel-lsp-lsp-rewrite-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let config = format!(
        "python = {:?}\n\n[llm]\nbase-url = \"{}\"\nmodel = \"test-model\"\nmax-tokens = 8000\n",
        python(),
        llm.base_url
    );
    std::fs::write(dir.join("kernel-lsp.toml"), config).expect("config");
    for f in [FILE, "reference.py"] {
        std::fs::copy(repo().join("examples/gru").join(f), dir.join(f)).expect("example copies");
    }
    dir
}

/// The options `kernel-lsp rewrite --cpu --set ... --candidates 1 --repairs 0` would take.
fn small_run() -> Value {
    json!({
        "cpu": true,
        "set": {"seq_len": 4, "batch_size": 2, "input_size": 16, "hidden_size": 16, "num_layers": 2},
        "candidates": 1,
        "repairs": 0,
        "bench-timeout": 120,
    })
}

/// A client that resolves code actions' commands, with progress and applyEdit.
fn start(ws: &Path) -> LspClient {
    let mut caps = LspClient::capabilities(&["utf-16"]);
    caps["textDocument"]["codeAction"]["resolveSupport"] = json!({"properties": ["command"]});
    let mut c = LspClient::start();
    let init = c.initialize_with(caps, Value::Null, Some(ws));
    assert_eq!(init["capabilities"]["codeActionProvider"]["resolveProvider"], true, "{init}");
    c
}

/// Every message until the response to `id` (within `limit`); the response last.
fn until_response(c: &mut LspClient, id: i64, limit: Duration) -> Vec<Value> {
    let deadline = Instant::now() + limit;
    let mut seen = Vec::new();
    loop {
        assert!(Instant::now() < deadline, "no response to {id} within {limit:?}; seen: {seen:#?}");
        for m in c.drain(Duration::from_millis(200)) {
            let done = m.get("method").is_none() && m["id"] == json!(id);
            seen.push(m);
            if done {
                return seen;
            }
        }
    }
}

fn progress_kinds(seen: &[Value]) -> Vec<String> {
    seen.iter()
        .filter(|m| m["method"] == "$/progress")
        .filter_map(|m| m["params"]["value"]["kind"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn make_persistent_is_offered_lazily_and_applied_only_after_confirmation() {
    let llm = MockLlm::start(vec![Reply::Answer(fixture("answer_persistent.md"))]);
    let ws = project("offered", &llm);
    let path = ws.join(FILE);
    let original = std::fs::read_to_string(&path).expect("copy");
    let uri = file_uri(&path);
    let mut c = start(&ws);
    c.open(&uri, &original);
    let diags = c.diagnostics(&uri, 1);
    let kl001 = diags
        .iter()
        .find(|d| d["code"] == "KL001")
        .cloned()
        .unwrap_or_else(|| panic!("KL001 on the Python time loop: {diags:#?}"));

    let actions = c.call(
        "textDocument/codeAction",
        json!({
            "textDocument": {"uri": uri},
            "range": kl001["range"],
            "context": {"diagnostics": [kl001]},
        }),
    );
    let action = actions
        .as_array()
        .expect("a list")
        .iter()
        .find(|a| a["title"] == "Make persistent with LLM")
        .cloned()
        .unwrap_or_else(|| panic!("the LLM action on KL001: {actions:#}"));
    assert_eq!(action["kind"], "refactor.rewrite");
    assert!(action.get("command").is_none() && action.get("edit").is_none(), "{action}");
    assert_eq!(action["data"]["action"], "persistent");
    assert_eq!(action["data"]["uri"], uri.as_str());
    assert_eq!(action["data"]["version"], 1);
    assert_eq!(action["data"]["range"], kl001["range"]);

    let resolved = c.call("codeAction/resolve", action.clone());
    let command = &resolved["command"];
    assert_eq!(command["command"], "kernel-lsp.rewrite");
    assert_eq!(command["arguments"], json!([uri, "persistent", kl001["range"]]));
    assert!(llm.requests().is_empty(), "listing and resolving the action asks the LLM nothing");

    let mut arguments = command["arguments"].as_array().cloned().expect("arguments");
    arguments.push(small_run());
    let id =
        c.send_request("workspace/executeCommand", json!({"command": "kernel-lsp.rewrite", "arguments": arguments}));
    let seen = until_response(&mut c, id, Duration::from_secs(150));
    let response = seen.last().expect("the response");
    assert!(response.get("error").is_none(), "{response:#}\nmessages: {:#?}", c.messages);

    let kinds = progress_kinds(&seen);
    assert_eq!(kinds.first().map(String::as_str), Some("begin"), "{kinds:?}");
    assert_eq!(kinds.last().map(String::as_str), Some("end"), "{kinds:?}");
    let reports: Vec<&str> = seen
        .iter()
        .filter(|m| m["params"]["value"]["kind"] == "report")
        .filter_map(|m| m["params"]["value"]["message"].as_str())
        .collect();
    assert!(reports.iter().any(|r| r.starts_with("candidate 1: benchmark — ")), "{reports:#?}");

    assert_eq!(c.applied_edits.len(), 1, "one workspace/applyEdit");
    let edit = &c.applied_edits[0]["edit"];
    let annotation = &edit["changeAnnotations"]["kernel-lsp.rewrite"];
    assert_eq!(annotation["needsConfirmation"], true, "{edit:#}");
    assert_eq!(annotation["label"], "Make persistent: correct on the CPU interpreter; speed not measured");
    assert!(
        annotation["description"].as_str().is_some_and(|d| d.starts_with("candidate 1: winner after 1 answer")),
        "{annotation}"
    );
    let change = &edit["documentChanges"][0];
    assert_eq!(change["textDocument"], json!({"uri": uri, "version": 1}));
    let edits = change["edits"].as_array().expect("edits");
    // One edit per changed region (the preview shows the real diff), none overlapping, in order.
    assert!(edits.len() > 1, "hunk by hunk, not one whole-file replacement: {}", edits.len());
    assert!(edits.iter().all(|e| e["annotationId"] == "kernel-lsp.rewrite"));
    let line = |e: &Value, end: &str| e["range"][end]["line"].as_u64().unwrap();
    assert!(edits.windows(2).all(|w| line(&w[0], "end") <= line(&w[1], "start")), "{edits:#?}");
    let unchanged_lines =
        original.lines().count() as u64 - edits.iter().map(|e| line(e, "end") - line(e, "start")).sum::<u64>();
    assert!(unchanged_lines > 0, "lines the rewrite kept are not in any edit");
    assert_eq!(
        common::apply_text_edits(&original, edits, "utf-16"),
        fixture_code("answer_persistent.md"),
        "the whole document becomes the verified candidate"
    );

    let result = &response["result"];
    assert_eq!(result["applied"], true, "{result:#}");
    assert_eq!(result["speedup"], Value::Null, "no speedup claimed on the CPU");
    assert!(result.get("edit").is_none_or(Value::is_null), "sent once, as applyEdit");
    assert_eq!(std::fs::read_to_string(&path).expect("file"), original, "the server never writes the file");
    assert_eq!(llm.requests().len(), 1);

    let timeline = c.call("workspace/executeCommand", json!({"command": "kernel-lsp.timeline", "arguments": [uri]}));
    let timeline = timeline.as_str().expect("a table");
    assert!(timeline.contains("| baseline ") && timeline.contains("| pick "), "{timeline}");
    let history = std::fs::read_to_string(ws.join(".kernel-lsp/history.jsonl")).unwrap_or_default();
    assert!(!history.contains("_c1a0"), "candidate runs are not recorded in the history: {history}");
    assert!(c.shutdown().success());
    let _ = std::fs::remove_dir_all(&ws);
}

#[test]
fn http_500_is_shown_as_an_error_and_nothing_is_applied() {
    let llm = MockLlm::start(vec![Reply::Status(500, "{\"error\": \"upstream exploded\"}".into())]);
    let ws = project("http500", &llm);
    let path = ws.join(FILE);
    let original = std::fs::read_to_string(&path).expect("copy");
    let uri = file_uri(&path);
    let mut c = start(&ws);
    c.open(&uri, &original);
    c.diagnostics(&uri, 1);

    // Unsaved changes are refused before anything runs.
    c.change(&uri, 2, json!([{"text": format!("{original}\n# edited\n")}]));
    let refused = c.request(
        "workspace/executeCommand",
        json!({"command": "kernel-lsp.rewrite", "arguments": [uri, "persistent", null, small_run()]}),
    );
    assert!(
        refused["error"]["message"].as_str().is_some_and(|m| m.contains("unsaved changes: save it first")),
        "{refused}"
    );
    c.change(&uri, 3, json!([{"text": original}]));

    let id = c.send_request(
        "workspace/executeCommand",
        json!({"command": "kernel-lsp.rewrite", "arguments": [uri, "persistent", null, small_run()]}),
    );
    let seen = until_response(&mut c, id, Duration::from_secs(120));
    let response = seen.last().expect("the response");
    let error = response["error"]["message"].as_str().unwrap_or_default();
    assert!(error.contains("HTTP 500"), "{response:#}");
    let shown =
        c.messages.iter().find(|m| m["type"] == 1).unwrap_or_else(|| panic!("an error message: {:#?}", c.messages));
    assert!(
        shown["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("kernel-lsp rewrite: ") && m.contains("upstream exploded")),
        "{shown}"
    );
    let kinds = progress_kinds(&seen);
    assert_eq!(kinds.last().map(String::as_str), Some("end"), "{kinds:?}");
    assert!(c.applied_edits.is_empty(), "{:#?}", c.applied_edits);
    assert_eq!(std::fs::read_to_string(&path).expect("file"), original);
    assert!(c.shutdown().success());
    let _ = std::fs::remove_dir_all(&ws);
}
