//! End-to-end: navigation over the real `kernel-lsp serve` binary: go to
//! definition, find references, document symbols, workspace symbols (open
//! documents and files on disk) and the call hierarchy between kernels,
//! helpers and the host functions that launch them.

mod common;

use common::{file_uri, temp_workspace, LspClient};
use serde_json::{json, Value};

const SRC: &str = r#"import triton
import triton.language as tl

SCALE = 2


@triton.jit
def scale_helper(x, BLOCK: tl.constexpr):
    return x * SCALE


@triton.jit
def copy_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, scale_helper(x, BLOCK=BLOCK), mask=offs < n)


def run(x):
    copy_kernel[(1,)](x, x.numel(), BLOCK=128)
    copy_kernel[(2,)](x, x.numel(), BLOCK=256)
"#;

/// The (line, character) of the `nth` occurrence of `needle` (ASCII text), `skip` characters in.
fn pos(needle: &str, nth: usize, skip: usize) -> Value {
    let at = SRC.match_indices(needle).nth(nth).map(|(i, _)| i).unwrap_or_else(|| panic!("{needle}"));
    let line = SRC[..at].matches('\n').count();
    let character = at - SRC[..at].rfind('\n').map_or(0, |i| i + 1) + skip;
    json!({"line": line, "character": character})
}

fn start(uri: &str) -> LspClient {
    let mut c = LspClient::start();
    c.initialize(&["utf-16"]);
    c.open(uri, SRC);
    c
}

fn at(uri: &str, position: Value) -> Value {
    json!({"textDocument": {"uri": uri}, "position": position})
}

#[test]
fn initialize_offers_navigation() {
    let mut c = LspClient::start();
    let caps = c.initialize(&["utf-16"])["capabilities"].clone();
    for key in [
        "definitionProvider",
        "referencesProvider",
        "documentSymbolProvider",
        "workspaceSymbolProvider",
        "callHierarchyProvider",
    ] {
        assert_eq!(caps[key], true, "{key} in {caps}");
    }
    assert!(c.shutdown().success());
}

#[test]
fn definition_from_a_launch_a_keyword_a_helper_call_and_a_constant() {
    let uri = "file:///tmp/kernel-lsp-e2e/nav_def.py";
    let mut c = start(uri);
    let cases = [
        // the launch's kernel name -> the kernel's name
        (pos("copy_kernel[(1,)]", 0, 4), pos("copy_kernel(x_ptr", 0, 0), 11),
        // `BLOCK=128` at the launch -> the constexpr parameter
        (pos("BLOCK=128", 0, 2), pos("BLOCK: tl.constexpr):\n    offs", 0, 0), 5),
        // a use inside the kernel -> the same parameter
        (pos("arange(0, BLOCK)", 0, 11), pos("BLOCK: tl.constexpr):\n    offs", 0, 0), 5),
        // `BLOCK=BLOCK` at the helper call: the keyword is the helper's parameter
        (pos("BLOCK=BLOCK", 0, 1), pos("BLOCK: tl.constexpr):\n    return", 0, 0), 5),
        // a helper call inside a kernel -> the helper
        (pos("scale_helper(x, BLOCK", 0, 3), pos("scale_helper(x, BLOCK: tl", 0, 0), 12),
        // a module constant used in a kernel -> its assignment
        (pos("SCALE\n", 0, 2), pos("SCALE = 2", 0, 0), 5),
    ];
    for (from, to, len) in cases {
        let loc = c.call("textDocument/definition", at(uri, from.clone()));
        assert_eq!(loc["uri"], uri, "{from}: {loc}");
        assert_eq!(loc["range"]["start"], to, "from {from}: {loc}");
        let mut end = to.clone();
        end["character"] = json!(to["character"].as_u64().unwrap() + len);
        assert_eq!(loc["range"]["end"], end, "from {from}: {loc}");
    }
    // a local variable, a `tl.*` name and a keyword of tl.load are nothing to go to
    for from in [pos("offs = ", 0, 1), pos("tl.arange", 0, 4), pos("mask=offs", 0, 1)] {
        assert_eq!(c.call("textDocument/definition", at(uri, from.clone())), Value::Null, "{from}");
    }
    assert!(c.shutdown().success());
}

#[test]
fn references_of_a_constexpr_parameter_and_of_a_kernel() {
    let uri = "file:///tmp/kernel-lsp-e2e/nav_refs.py";
    let mut c = start(uri);
    let mut params = at(uri, pos("BLOCK=256", 0, 0));
    params["context"] = json!({"includeDeclaration": true});
    let refs = c.call("textDocument/references", params.clone());
    let starts: Vec<Value> = refs.as_array().unwrap().iter().map(|r| r["range"]["start"].clone()).collect();
    assert_eq!(
        starts,
        vec![
            pos("BLOCK: tl.constexpr):\n    offs", 0, 0),
            pos("arange(0, BLOCK)", 0, 10),
            pos("BLOCK=BLOCK", 0, 6),
            pos("BLOCK=128", 0, 0),
            pos("BLOCK=256", 0, 0),
        ],
        "{refs}"
    );
    params["context"] = json!({"includeDeclaration": false});
    assert_eq!(c.call("textDocument/references", params).as_array().unwrap().len(), 4);
    let mut params = at(uri, pos("def copy_kernel", 0, 5));
    params["context"] = json!({"includeDeclaration": false});
    let refs = c.call("textDocument/references", params);
    let starts: Vec<Value> = refs.as_array().unwrap().iter().map(|r| r["range"]["start"].clone()).collect();
    assert_eq!(starts, vec![pos("copy_kernel[(1,)]", 0, 0), pos("copy_kernel[(2,)]", 0, 0)]);
    assert!(c.shutdown().success());
}

#[test]
fn document_symbols_nest_parameters_under_kernels() {
    let uri = "file:///tmp/kernel-lsp-e2e/nav_syms.py";
    let mut c = start(uri);
    let syms = c.call("textDocument/documentSymbol", json!({"textDocument": {"uri": uri}}));
    let names: Vec<(&str, u64)> =
        syms.as_array().unwrap().iter().map(|s| (s["name"].as_str().unwrap(), s["kind"].as_u64().unwrap())).collect();
    // Constant = 14, Function = 12
    assert_eq!(names, vec![("SCALE", 14), ("scale_helper", 12), ("copy_kernel", 12), ("run", 12)]);
    let kernel = &syms[2];
    assert_eq!(kernel["detail"], "@triton.jit kernel, 2 launch sites");
    assert_eq!(syms[1]["detail"], "@triton.jit helper");
    let kids: Vec<(&str, u64)> = kernel["children"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["kind"].as_u64().unwrap()))
        .collect();
    // a constexpr parameter is a Constant (14), the others Variables (13)
    assert_eq!(kids, vec![("x_ptr", 13), ("n", 13), ("BLOCK", 14)]);
    assert_eq!(kernel["selectionRange"]["start"], pos("copy_kernel(x_ptr", 0, 0));
    assert!(c.shutdown().success());
}

#[test]
fn workspace_symbols_find_kernels_in_open_documents_and_on_disk() {
    let ws = temp_workspace("nav-ws");
    std::fs::create_dir_all(ws.join("ops")).unwrap();
    std::fs::create_dir_all(ws.join(".venv")).unwrap();
    let on_disk = "import triton\n\n@triton.jit\ndef disk_softmax_kernel(x_ptr):\n    pass\n";
    std::fs::write(ws.join("ops/softmax.py"), on_disk).unwrap();
    // hidden folders (a virtual environment) are not scanned
    std::fs::write(ws.join(".venv/hidden.py"), on_disk.replace("disk_softmax", "hidden_softmax")).unwrap();
    std::fs::write(ws.join("notes.py"), "def not_a_kernel():\n    pass\n").unwrap();
    let open_uri = file_uri(&ws.join("open.py"));
    let mut c = LspClient::start();
    c.initialize_with(LspClient::capabilities(&["utf-16"]), Value::Null, Some(&ws));
    c.open(&open_uri, SRC);
    let found = c.call("workspace/symbol", json!({"query": "softmax"}));
    let names: Vec<&str> = found.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["disk_softmax_kernel"], "{found}");
    assert_eq!(found[0]["location"]["uri"], file_uri(&ws.join("ops/softmax.py")));
    assert_eq!(found[0]["location"]["range"]["start"], json!({"line": 3, "character": 4}));
    // the letters of the query in order, any case: kernels of the open document
    let found = c.call("workspace/symbol", json!({"query": "CPYkrn"}));
    let names: Vec<&str> = found.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    assert_eq!(names, vec!["copy_kernel"], "{found}");
    assert_eq!(found[0]["location"]["uri"], open_uri);
    let all = c.call("workspace/symbol", json!({"query": ""}));
    let mut names: Vec<&str> = all.as_array().unwrap().iter().map(|s| s["name"].as_str().unwrap()).collect();
    names.sort();
    assert_eq!(names, vec!["copy_kernel", "disk_softmax_kernel", "scale_helper"], "{all}");
    assert!(c.shutdown().success());
    let _ = std::fs::remove_dir_all(&ws);
}

#[test]
fn call_hierarchy_goes_from_a_kernel_to_its_launch_sites_and_back() {
    let uri = "file:///tmp/kernel-lsp-e2e/nav_calls.py";
    let mut c = start(uri);
    let items = c.call("textDocument/prepareCallHierarchy", at(uri, pos("def copy_kernel", 0, 6)));
    let kernel = items[0].clone();
    assert_eq!(kernel["name"], "copy_kernel");
    assert_eq!(kernel["detail"], "@triton.jit kernel");
    let incoming = c.call("callHierarchy/incomingCalls", json!({"item": kernel}));
    assert_eq!(incoming.as_array().unwrap().len(), 1, "{incoming}");
    assert_eq!(incoming[0]["from"]["name"], "run");
    let ranges: Vec<Value> = incoming[0]["fromRanges"].as_array().unwrap().iter().map(|r| r["start"].clone()).collect();
    assert_eq!(ranges, vec![pos("copy_kernel[(1,)]", 0, 0), pos("copy_kernel[(2,)]", 0, 0)]);
    let outgoing = c.call("callHierarchy/outgoingCalls", json!({"item": kernel}));
    assert_eq!(outgoing[0]["to"]["name"], "scale_helper", "{outgoing}");
    assert_eq!(outgoing[0]["to"]["detail"], "@triton.jit helper");
    // and back from the host function: what it launches
    let run = c.call("textDocument/prepareCallHierarchy", at(uri, pos("def run", 0, 5)))[0].clone();
    let launched = c.call("callHierarchy/outgoingCalls", json!({"item": run}));
    assert_eq!(launched[0]["to"]["name"], "copy_kernel", "{launched}");
    assert_eq!(launched[0]["fromRanges"].as_array().unwrap().len(), 2);
    // the helper's callers are the kernels that call it
    let helper = c.call("textDocument/prepareCallHierarchy", at(uri, pos("scale_helper(x, BLOCK=", 0, 2)))[0].clone();
    let callers = c.call("callHierarchy/incomingCalls", json!({"item": helper}));
    assert_eq!(callers[0]["from"]["name"], "copy_kernel", "{callers}");
    // nothing to prepare on a local variable
    assert_eq!(c.call("textDocument/prepareCallHierarchy", at(uri, pos("offs = ", 0, 0))), Value::Null);
    assert!(c.shutdown().success());
}
