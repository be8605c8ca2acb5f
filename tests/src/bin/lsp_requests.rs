//! Latency of what a Triton author asks while typing: hover, signature help
//! and completion on the generated 5,000-line file (`kernel_lsp_tests::generate`),
//! with 20 such files open, and the server's resident memory.
//!
//! At each of 60 kernels it makes an edit (` + 1` typed at the end of
//! `y = x * 2.0`) and at once asks, in turn, a hover on `tl.load`, signature
//! help inside that `tl.load(...)` and completion after `tl.`: the first
//! request after an edit reads a version nobody has read yet (its analysis
//! awaited by hover, its facts built). Each request is then asked again on
//! the same version (warm). Times are from sending the request to its
//! answer; p50/p99/max per request and kind, then VmRSS and VmHWM. The
//! compiler in the loop is off (`kernel-lsp.toml` in the temporary
//! workspace) unless `--compile`: it would compile every kernel of 20 files
//! on the same cores while the requests are timed.
//!
//! `KL_REQUESTS_DUMP=PATH` writes each request's time, in order, to PATH.
//!
//! ```text
//! cargo build --release -p kernel-lsp -p kernel-lsp-tests
//! target/release/lsp_requests [--kernel-lsp PATH] [--lines N] [--files N] [--places N] [--compile]
//! ```

use std::time::{Duration, Instant};

use kernel_lsp_tests::{default_kernel_lsp, generate};
use serde_json::{json, Value};

use kernel_lsp_tests::stdio::StdioServer as Server;

const TIMEOUT: Duration = Duration::from_secs(60);
/// #36's goal for each request's p99.
const GOAL_MS: f64 = 20.0;

fn percentiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p).round() as usize];
    (at(0.5), at(0.99), v[v.len() - 1])
}

fn main() {
    let mut binary = default_kernel_lsp().display().to_string();
    let (mut lines, mut files, mut places) = (5000, 20, 60);
    let mut compile = false;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut num = |what: &str| args.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| panic!("{what} N"));
        match a.as_str() {
            "--kernel-lsp" => {
                let p = args.next().expect("--kernel-lsp PATH");
                binary = std::fs::canonicalize(&p).map_or(p, |p| p.display().to_string());
            }
            "--lines" => lines = num("--lines"),
            "--compile" => compile = true,
            "--files" => files = num("--files"),
            "--places" => places = num("--places"),
            other => panic!(
                "usage: lsp_requests [--kernel-lsp PATH] [--lines N] [--files N] [--places N] [--compile]; got {other}"
            ),
        }
    }
    let generated = generate(lines);
    let text = generated.text.as_str();
    let dir = std::env::temp_dir().join(format!("kl-requests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    if !compile {
        // The compiler in the loop would compile 110 kernels per file in the background, on the same cores.
        std::fs::write(dir.join("kernel-lsp.toml"), "[compile]\nenabled = false\n").expect("config");
    }
    let mut server = Server::start(&[binary.clone(), "serve".to_string()], Some(&dir), TIMEOUT);
    let root = format!("file://{}", dir.display());
    server.request(
        "initialize",
        json!({"processId": std::process::id(), "rootUri": root,
               "capabilities": {"general": {"positionEncodings": ["utf-16"]},
                                "textDocument": {"completion": {"completionItem": {"snippetSupport": true}}}}}),
    );
    server.notify("initialized", json!({}));
    let uris: Vec<String> = (0..files).map(|i| format!("{root}/kernels_{i}.py")).collect();
    for uri in &uris {
        server.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
        );
        server.wait(|m| m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == json!(uri));
    }
    let rss_open = server.memory_kb("VmRSS:");
    let all: Vec<&str> = text.lines().collect();
    let step = (generated.kernel_lines.len() / places.max(1)).max(1);
    let mut timings: Vec<(&str, bool, f64)> = Vec::new();
    let uri = uris[0].clone();
    for (k, &line) in generated.kernel_lines.iter().step_by(step).take(places).enumerate() {
        let end = all[line].encode_utf16().count() as u64 + 4 * k as u64;
        server.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": 2 + k as i64},
                   "contentChanges": [{"range": {"start": {"line": line, "character": end}, "end": {"line": line, "character": end}}, "text": " + 1"}]}),
        );
        let load = (0..line).rev().find(|&l| all[l].contains("x = tl.load(x_ptr")).expect("the kernel's tl.load");
        let col = all[load].find("tl.load").expect("tl.load") as u64;
        let at = |c: u64| json!({"textDocument": {"uri": uri}, "position": {"line": load, "character": c}});
        let asks = [
            ("hover", "textDocument/hover", at(col + 4)),
            ("signatureHelp", "textDocument/signatureHelp", at(col + 8)),
            ("completion", "textDocument/completion", at(col + 5)),
        ];
        for warm in [false, true] {
            for (name, method, params) in &asks {
                let started = Instant::now();
                let answer = server.request(method, params.clone());
                timings.push((name, warm, started.elapsed().as_secs_f64() * 1000.0));
                assert!(answer.get("error").is_none() && !answer["result"].is_null(), "{name}: {answer}");
            }
        }
    }
    if let Some(path) = std::env::var_os("KL_REQUESTS_DUMP") {
        // Each request's time, in order: "name warm ms" a line, to line them up with a server's log.
        let lines: Vec<String> = timings.iter().map(|(n, w, ms)| format!("{n} {w} {ms:.3}")).collect();
        let _ = std::fs::write(path, lines.join("\n") + "\n");
    }
    let (rss, hwm) = (server.memory_kb("VmRSS:"), server.memory_kb("VmHWM:"));
    println!(
        "file: {lines} lines, {} kernels; {files} files open; {places} edits, each followed by the requests",
        generated.kernel_lines.len()
    );
    println!(
        "| request | after an edit p50 / p99 / max (ms) | same version p50 / p99 / max (ms) | p99 <= {GOAL_MS} ms |"
    );
    println!("|---|---|---|---|");
    let mut all_met = true;
    for name in ["hover", "signatureHelp", "completion"] {
        let pick = |warm: bool| timings.iter().filter(|t| t.0 == name && t.1 == warm).map(|t| t.2).collect::<Vec<_>>();
        let (c, w) = (percentiles(pick(false)), percentiles(pick(true)));
        let met = c.1 <= GOAL_MS && w.1 <= GOAL_MS;
        all_met &= met;
        println!(
            "| {name} | {:.1} / {:.1} / {:.1} | {:.1} / {:.1} / {:.1} | {} |",
            c.0,
            c.1,
            c.2,
            w.0,
            w.1,
            w.2,
            if met { "yes" } else { "no" }
        );
    }
    let mb = |kb: Option<u64>| kb.map_or("?".into(), |kb| format!("{:.0} MB", kb as f64 / 1024.0));
    println!(
        "resident memory: {} with {files} files open, {} after the requests (peak {})",
        mb(rss_open),
        mb(rss),
        mb(hwm)
    );
    println!("goal met: {}", if all_met { "yes" } else { "no" });
    server.request("shutdown", Value::Null);
    server.notify("exit", Value::Null);
    let _ = server.child.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
