//! A chat-completions server on loopback for the rewrite tests: hand-rolled
//! HTTP/1.1 on tokio, answering `POST /v1/chat/completions` with streamed
//! (SSE) replays of recorded answers from `tests/fixtures/llm/`, or with the
//! failures a real server produces. Every request is recorded for the test
//! to check.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What the server does with one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Streams this answer in chunks, with a finish_reason, usage and `[DONE]`.
    Answer(String),
    /// An HTTP error status with this body.
    Status(u16, String),
    /// 401 whose body echoes the bearer token, as some services do.
    EchoKey401,
    /// Headers and the first chunk, then nothing.
    Stall(String),
    /// The first half of the chunks, then the connection closes: no finish_reason, no `[DONE]`.
    Truncated(String),
    /// 200 with a body that is not a chat-completions stream.
    Garbage(String),
}

/// A request as the server saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub path: String,
    /// Header lines, names lower-cased.
    pub headers: Vec<String>,
    pub body: Value,
}

impl Recorded {
    /// The content of the last message (the newest user turn).
    pub fn last_message(&self) -> String {
        self.body["messages"]
            .as_array()
            .and_then(|m| m.last())
            .and_then(|m| m["content"].as_str())
            .unwrap_or("")
            .to_string()
    }
}

pub struct MockLlm {
    pub base_url: String,
    requests: Arc<Mutex<Vec<Recorded>>>,
    _runtime: tokio::runtime::Runtime,
}

impl MockLlm {
    /// Serves `replies` in order, the last one again for every later request.
    pub fn start(replies: Vec<Reply>) -> MockLlm {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
        let listener = runtime.block_on(TcpListener::bind("127.0.0.1:0")).expect("bind loopback");
        let port = listener.local_addr().expect("address").port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        let replies = Arc::new(replies);
        runtime.spawn(async move {
            // The reply index moves with each request read: a bare connection
            // (the client's reachability check) takes no reply.
            let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (recorded, replies, next) = (recorded.clone(), replies.clone(), next.clone());
                tokio::spawn(async move { serve(stream, &replies, &next, recorded).await });
            }
        });
        MockLlm { base_url: format!("http://127.0.0.1:{port}/v1"), requests, _runtime: runtime }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().expect("lock").clone()
    }
}

/// The text of a recorded answer.
pub fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/llm").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The code of the first ```python block of a recorded answer.
pub fn fixture_code(name: &str) -> String {
    let answer = fixture(name);
    let start = answer.find("```python\n").expect("a python block") + "```python\n".len();
    let end = start + answer[start..].find("\n```").expect("a closing fence") + 1;
    answer[start..end].to_string()
}

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The Python with torch and triton the rewrite tests run the harness with:
/// `KERNEL_LSP_TEST_PYTHON`, else `<repo>/.venv/bin/python`.
pub fn python() -> String {
    std::env::var("KERNEL_LSP_TEST_PYTHON").unwrap_or_else(|_| repo().join(".venv/bin/python").display().to_string())
}

/// The debug `kernel-lsp` binary, built once per test process.
pub fn binary() -> &'static Path {
    static BIN: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        let target = std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| repo().join("target"));
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .args(["build", "-p", "kernel-lsp"])
            .current_dir(repo())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "cargo build -p kernel-lsp failed");
        target.join("debug").join("kernel-lsp")
    })
}

async fn read_request(stream: &mut TcpStream) -> Option<Recorded> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let request_line = lines.next()?.to_string();
    let headers: Vec<String> = lines
        .map(|l| match l.split_once(':') {
            Some((k, v)) => format!("{}:{v}", k.to_ascii_lowercase()),
            None => l.to_string(),
        })
        .collect();
    let length: usize =
        headers.iter().find_map(|h| h.strip_prefix("content-length:")).and_then(|v| v.trim().parse().ok()).unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < length {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            break;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    let path = request_line.split_whitespace().nth(1).unwrap_or("").to_string();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Some(Recorded { path, headers, body })
}

fn sse_chunks(answer: &str) -> Vec<String> {
    let chars: Vec<char> = answer.chars().collect();
    let mut out: Vec<String> = chars
        .chunks(120)
        .map(|piece| {
            let content: String = piece.iter().collect();
            let chunk = json!({"id": "mock", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": content}, "finish_reason": null}]});
            format!("data: {chunk}\n\n")
        })
        .collect();
    out.push(format!(
        "data: {}\n\n",
        json!({"id": "mock", "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    ));
    let usage =
        json!({"prompt_tokens": 1000, "completion_tokens": chars.len() / 4, "total_tokens": 1000 + chars.len() / 4});
    out.push(format!("data: {}\n\n", json!({"id": "mock", "choices": [], "usage": usage})));
    out.push("data: [DONE]\n\n".to_string());
    out
}

const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n";

async fn serve(
    mut stream: TcpStream,
    replies: &[Reply],
    next: &std::sync::atomic::AtomicUsize,
    recorded: Arc<Mutex<Vec<Recorded>>>,
) {
    let Some(request) = read_request(&mut stream).await else {
        return;
    };
    let n = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let reply = replies[n.min(replies.len() - 1)].clone();
    let token = request.headers.iter().find_map(|h| h.strip_prefix("authorization:")).map(|v| v.trim().to_string());
    recorded.lock().expect("lock").push(request);
    match reply {
        Reply::Answer(text) => {
            let _ = stream.write_all(SSE_HEAD.as_bytes()).await;
            for chunk in sse_chunks(&text) {
                let _ = stream.write_all(chunk.as_bytes()).await;
                let _ = stream.flush().await;
            }
        }
        Reply::Status(status, body) => {
            let head = format!(
                "HTTP/1.1 {status} Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all((head + &body).as_bytes()).await;
        }
        Reply::EchoKey401 => {
            let key = token.unwrap_or_default();
            let body = json!({"error": {"message": format!("Incorrect API key provided: {key}"), "type": "invalid_request_error"}}).to_string();
            let head = format!("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len());
            let _ = stream.write_all((head + &body).as_bytes()).await;
        }
        Reply::Stall(text) => {
            let _ = stream.write_all(SSE_HEAD.as_bytes()).await;
            if let Some(first) = sse_chunks(&text).first() {
                let _ = stream.write_all(first.as_bytes()).await;
                let _ = stream.flush().await;
            }
            tokio::time::sleep(Duration::from_secs(120)).await;
        }
        Reply::Truncated(text) => {
            let _ = stream.write_all(SSE_HEAD.as_bytes()).await;
            let chunks = sse_chunks(&text);
            for chunk in &chunks[..chunks.len() / 2] {
                let _ = stream.write_all(chunk.as_bytes()).await;
            }
            let _ = stream.flush().await;
        }
        Reply::Garbage(body) => {
            let head = "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n";
            let _ = stream.write_all((head.to_string() + &body).as_bytes()).await;
        }
    }
    let _ = stream.shutdown().await;
}
