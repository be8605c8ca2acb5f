//! A baseline for `lsp_latency`: a language server that does no work. It
//! answers `initialize`, and every `didOpen` and `didChange` at once with a
//! `publishDiagnostics` of a fixed size (the diagnostics `KL_NULL_PUBLISH`
//! names: a file holding one publication, as kernel-lsp sent it; without it,
//! 220 diagnostics of about 380 bytes, what kernel-lsp publishes for the
//! 5,000-line benchmark file). Run under the same client as the servers
//! (`lsp_latency --kernel-lsp target/release/lsp_null`), its latencies are
//! the machine's and the client's share of a keystroke: reading a frame,
//! writing 84 KB through a pipe, the client parsing it.
//!
//! It reads and writes as kernel-lsp does: a frame read whole from stdin,
//! one `write` of header and body into a pipe widened to hold it.

use std::io::{BufReader, Write};

use kernel_lsp_tests::stdio::read_frame;

use serde_json::{json, Value};

fn write_frame(out: &mut impl Write, msg: &Value) -> bool {
    let body = serde_json::to_vec(msg).expect("json");
    let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
    frame.extend_from_slice(&body);
    out.write_all(&frame).is_ok() && out.flush().is_ok()
}

/// The diagnostics every publication carries.
fn diagnostics() -> Value {
    if let Some(path) = std::env::var_os("KL_NULL_PUBLISH") {
        let text = std::fs::read(&path).unwrap_or_else(|e| panic!("KL_NULL_PUBLISH {path:?}: {e}"));
        let msg: Value = serde_json::from_slice(&text).expect("KL_NULL_PUBLISH holds one publishDiagnostics");
        return msg["params"]["diagnostics"].clone();
    }
    let message = "`triton.language` has no `tanh` (checked against the bundled list, Triton 3.9.0): \
                   the kernel fails with AttributeError. Use `2 * tl.sigmoid(2 * x) - 1` or `libdevice.tanh`. \
                   [unknown-triton-function]";
    let one = |line: usize| {
        json!({
            "range": {"start": {"line": line, "character": 11}, "end": {"line": line, "character": 18}},
            "severity": 1, "code": "KL005", "source": "kernel-lsp", "message": message,
        })
    };
    Value::Array((0..220).map(|i| one(20 + 50 * i)).collect())
}

fn main() {
    // As kernel-lsp does: a publication larger than a pipe's default 64 KB goes out in one write.
    // SAFETY: F_SETPIPE_SZ only resizes the pipe's buffer; on anything else it fails.
    unsafe { libc::fcntl(1, libc::F_SETPIPE_SZ, 1 << 20) };
    let diagnostics = diagnostics();
    let mut reader = BufReader::new(std::io::stdin().lock());
    // Unbuffered: `stdout()` is line-buffered and would write the header apart from the body.
    use std::os::fd::FromRawFd;
    // SAFETY: fd 1 stays open for the life of the process; `ManuallyDrop` never closes it.
    let mut out = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) });
    while let Some(msg) = read_frame(&mut reader) {
        let method = msg["method"].as_str().unwrap_or_default();
        let reply = match method {
            "initialize" => {
                json!({"jsonrpc": "2.0", "id": msg["id"], "result": {"capabilities": {"textDocumentSync": 2}}})
            }
            "shutdown" => json!({"jsonrpc": "2.0", "id": msg["id"], "result": null}),
            "exit" => return,
            "textDocument/didOpen" | "textDocument/didChange" => {
                let doc = &msg["params"]["textDocument"];
                json!({"jsonrpc": "2.0", "method": "textDocument/publishDiagnostics", "params": {
                    "uri": doc["uri"], "version": doc["version"], "diagnostics": diagnostics,
                }})
            }
            _ if msg.get("id").is_some() && msg.get("method").is_some() => {
                json!({"jsonrpc": "2.0", "id": msg["id"], "result": null})
            }
            _ => continue,
        };
        if !write_frame(&mut *out, &reply) {
            return;
        }
    }
}
