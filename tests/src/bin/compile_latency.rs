//! Latency of the compiler in the editor, through `kernel-lsp serve` over stdio.
//!
//! Opens a generated ~300-line KernelBench-style candidate (elementwise
//! kernels, their launchers, `ModelNew`, `get_inputs`) in which one kernel
//! always fails to compile (`break`), so a publication that carries its KL901
//! is one the compiler finished. Then:
//!
//! - cold start: `didOpen` to the first compiled publication (the worker
//!   starts in its sandbox, imports Triton, compiles every kernel);
//! - warm: each timed edit changes a literal inside one kernel (a fresh
//!   compilation to a cubin; the others come from the cache); the time from
//!   the `didChange` to its compiled publication, less the debounce, is the
//!   latency after the pause (goal: p50 within 1.5 s);
//! - edit to static diagnostics: the same edits' first publication, with the
//!   compiler on, and in a second server with `compile.enabled = false`.
//!
//! ```text
//! cargo build -p kernel-lsp -p kernel-lsp-tests
//! target/debug/compile_latency [--kernel-lsp PATH] [--python PATH] [--edits N] [--debounce-ms N]
//! ```

use std::time::{Duration, Instant};

use kernel_lsp_tests::default_kernel_lsp;
use serde_json::{json, Value};

use kernel_lsp_tests::stdio::StdioServer as Server;

const TIMEOUT: Duration = Duration::from_secs(300);

/// Kernels in the candidate: about 300 lines.
const KERNELS: usize = 14;

/// The candidate: `kernels` elementwise kernels, one broken, about 25 lines each with its launcher.
fn candidate(kernels: usize) -> String {
    let mut s = String::from(
        "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n\nN = 1 << 20\n\n",
    );
    for i in 0..kernels {
        let body = if i == 0 { "    for j in range(2):\n        break\n".to_string() } else { String::new() };
        s.push_str(&format!(
            r#"
@triton.jit
def k{i}(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
{body}    y = x * 2.0 + 1.0
    y = tl.where(y > 0, y, 0.0)
    tl.store(y_ptr + offs, y, mask=mask)


def launch{i}(x):
    y = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, 1024),)
    k{i}[grid](x, y, n, BLOCK=1024, num_warps=4)
    return y

"#
        ));
    }
    s.push_str("\nclass ModelNew(nn.Module):\n    def forward(self, x):\n");
    for i in 0..kernels {
        s.push_str(&format!("        x = launch{i}(x)\n"));
    }
    s.push_str("        return x\n\n\ndef get_inputs():\n    return [torch.randn(N)]\n\n\ndef get_init_inputs():\n    return []\n");
    s
}

fn is_publication(m: &Value, version: i64) -> bool {
    m["method"] == "textDocument/publishDiagnostics" && m["params"]["version"] == json!(version)
}

fn compiled(m: &Value, version: i64) -> bool {
    is_publication(m, version)
        && m["params"]["diagnostics"].as_array().is_some_and(|d| d.iter().any(|d| d["code"] == "KL901"))
}

fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() as f64 - 1.0) * p).round() as usize]
}

struct Timings {
    cold_ms: f64,
    compiled_ms: Vec<f64>,
    static_ms: Vec<f64>,
}

fn session(bin: &str, python: &str, edits: usize, debounce: u64, compile: bool) -> Timings {
    let dir = std::env::temp_dir().join(format!("kernel-lsp-compile-latency-{}-{compile}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::write(
        dir.join("kernel-lsp.toml"),
        format!("python = {python:?}\n\n[compile]\nenabled = {compile}\ndebounce-ms = {debounce}\n"),
    )
    .expect("config");
    let kernels = KERNELS;
    let mut text = candidate(kernels);
    let path = dir.join("candidate.py");
    std::fs::write(&path, &text).expect("write");
    let uri = format!("file://{}", path.display());
    let mut s = Server::start(&[bin.to_string(), "serve".to_string()], None, TIMEOUT);
    s.request(
        "initialize",
        json!({"processId": null, "rootUri": format!("file://{}", dir.display()), "capabilities": {}}),
    );
    s.notify("initialized", json!({}));
    let opened = Instant::now();
    s.notify(
        "textDocument/didOpen",
        json!({"textDocument": {"uri": uri, "languageId": "python", "version": 1, "text": text}}),
    );
    let cold_ms = if compile {
        s.wait(|m| compiled(m, 1));
        opened.elapsed().as_secs_f64() * 1e3
    } else {
        s.wait(|m| is_publication(m, 1));
        0.0
    };
    let mut t = Timings { cold_ms, compiled_ms: Vec::new(), static_ms: Vec::new() };
    for e in 0..edits {
        let version = e as i64 + 2;
        // A fresh literal in kernel 1 + e % (kernels - 1): that kernel compiles again, to a cubin.
        let kernel = 1 + e % (kernels - 1);
        let at = text.find(&format!("def k{kernel}(")).expect("kernel");
        let lit = at + text[at..].find("y = x * ").expect("literal") + 8;
        let end = lit + text[lit..].find(' ').expect("end");
        let new = format!("{}.5", e + 3);
        text.replace_range(lit..end, &new);
        let sent = Instant::now();
        s.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]}),
        );
        s.wait(|m| is_publication(m, version));
        t.static_ms.push(sent.elapsed().as_secs_f64() * 1e3);
        if compile {
            s.wait(|m| compiled(m, version));
            t.compiled_ms.push(sent.elapsed().as_secs_f64() * 1e3 - debounce as f64);
        } else {
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    t
}

fn main() {
    let mut bin = default_kernel_lsp().display().to_string();
    let mut python = std::env::var("KERNEL_LSP_TEST_PYTHON").unwrap_or_else(|_| ".venv/bin/python".to_string());
    let mut edits = 20;
    let mut debounce = 300;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let value = args.next().unwrap_or_default();
        match a.as_str() {
            "--kernel-lsp" => bin = value,
            "--python" => python = value,
            "--edits" => edits = value.parse().expect("--edits N"),
            "--debounce-ms" => debounce = value.parse().expect("--debounce-ms N"),
            other => panic!("unknown argument {other}"),
        }
    }
    let lines = candidate(KERNELS).lines().count();
    println!(
        "candidate: {lines} lines, {KERNELS} kernels (one never compiles); {edits} timed edits; debounce {debounce} ms"
    );
    let on = session(&bin, &python, edits, debounce, true);
    let off = session(&bin, &python, edits, debounce, false);
    let (mut c, mut s_on, mut s_off) = (on.compiled_ms, on.static_ms, off.static_ms);
    println!("cold start (didOpen to the first compiled publication): {:.0} ms", on.cold_ms);
    println!(
        "compile diagnostics after the pause, warm worker: p50 {:.0} ms, p90 {:.0} ms, max {:.0} ms (goal: p50 <= 1500)",
        percentile(&mut c, 0.5),
        percentile(&mut c, 0.9),
        percentile(&mut c, 1.0)
    );
    println!(
        "edit to static diagnostics: compiler on p50 {:.1} / p99 {:.1} ms; compiler off p50 {:.1} / p99 {:.1} ms",
        percentile(&mut s_on, 0.5),
        percentile(&mut s_on, 0.99),
        percentile(&mut s_off, 0.5),
        percentile(&mut s_off, 0.99)
    );
}
