//! The OpenAI chat-completions client: what vLLM, llama.cpp's server, Ollama
//! and the hosted services speak. One call = one streamed answer.
//!
//! Every call is bounded three ways: the connection (`connect`), the whole
//! call (`timeout`), and the stream (`stall`: no bytes for that long is an
//! error, so a server that hangs mid-answer does not hold the editor for the
//! whole timeout). 429 and 5xx are retried with exponential backoff, honouring
//! `Retry-After`. Cancellation is dropping the future.
//!
//! The API key lives in [`Secret`], whose `Debug` and `Display` print nothing
//! of it, and every text that comes back from the server (error bodies) is
//! scrubbed of it before it can reach an error message or a log.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sse_stream::SseByteStream;

/// An API key. Never printed: `Debug` shows `Secret(***)`.
#[derive(Clone)]
pub struct Secret(String);

impl Secret {
    pub fn new(key: impl Into<String>) -> Secret {
        Secret(key.into())
    }

    /// Replaces every occurrence of the key in `text`.
    pub(crate) fn scrub(&self, text: &str) -> String {
        if self.0.len() < 4 {
            return text.to_string();
        }
        text.replace(&self.0, "***")
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn system(content: impl Into<String>) -> Message {
        Message { role: "system".into(), content: content.into() }
    }
    pub fn user(content: impl Into<String>) -> Message {
        Message { role: "user".into(), content: content.into() }
    }
    pub fn assistant(content: impl Into<String>) -> Message {
        Message { role: "assistant".into(), content: content.into() }
    }
}

/// Tokens one call used, as the server reported them, or estimated
/// (about four characters a token) when it did not.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    /// True when the server sent no usage and these are estimates.
    #[serde(default)]
    pub estimated: bool,
}

impl Usage {
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.estimated |= other.estimated;
    }
}

/// One answer.
#[derive(Debug, Clone)]
pub struct Answer {
    pub text: String,
    pub usage: Usage,
    pub finish_reason: Option<String>,
    pub latency: Duration,
}

/// Why a call (or the rewrite around it) failed. Messages name the server
/// and what to do; none contains the API key.
#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("cannot reach the LLM at {url}: {reason}. Is the server running? (llm.base-url)")]
    Unreachable { url: String, reason: String },
    #[error(
        "no LLM is configured: nothing answers at {url} (the default llm.base-url: {reason}). Set llm.base-url \
         (any OpenAI-compatible chat-completions endpoint), llm.model and, for a hosted service, llm.api-key-env \
         (the name of the variable that holds the key) in kernel-lsp.toml or the editor's kernelLsp.llm settings; \
         see docs/rewrite.md#endpoints"
    )]
    NotConfigured { url: String, reason: String },
    #[error(
        "the LLM at {url} rejected the API key (HTTP {status}): {body}. Check the key in ${var} (llm.api-key-env)"
    )]
    Unauthorized { url: String, status: u16, var: String, body: String },
    #[error("the LLM at {url} answered HTTP {status} ({attempts} attempt{s}): {body}", s = if *attempts == 1 { "" } else { "s" })]
    Http { url: String, status: u16, attempts: u32, body: String },
    #[error("the LLM's answer is not a chat-completions stream: {0}")]
    Garbage(String),
    #[error("the LLM's answer stream was cut off: {0}")]
    Truncated(String),
    #[error("the LLM stopped sending for {secs:.0} s in the middle of its answer (stalled stream)")]
    Stalled { secs: f64 },
    #[error("the LLM call took longer than {secs:.0} s (llm.timeout)")]
    Timeout { secs: f64 },
    #[error("the LLM's answer has no ```python code block")]
    NoCode,
    #[error("the API key variable ${0} (llm.api-key-env) is not set or empty")]
    MissingKey(String),
    #[error("the LLM's answer is over llm.max-answer-kb = {kb} KiB; refused without reading the rest")]
    TooLarge { kb: u64 },
    #[error("{0}")]
    Setup(String),
    #[error("the benchmark could not run: {0}")]
    Bench(String),
}

/// What a client needs; build it from the settings with [`ClientConfig::from_settings`].
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<Secret>,
    /// The variable the key came from, for error messages.
    pub api_key_env: Option<String>,
    pub max_tokens: u32,
    /// Bytes of answer stream read at most (`llm.max-answer-kb`).
    pub max_answer_bytes: u64,
    pub connect_timeout: Duration,
    /// The whole call, retries included.
    pub timeout: Duration,
    /// No bytes for this long in the answer stream is an error.
    pub stall: Duration,
    /// Retries after the first attempt on 429 and 5xx.
    pub retries: u32,
    /// The first backoff; doubled on each retry.
    pub backoff: Duration,
}

impl ClientConfig {
    /// Reads the key from the variable `llm.api-key-env` names (none: no key).
    /// `timeout` overrides `llm.timeout`; the stall limit is half the timeout, at most 60 s.
    pub(crate) fn from_settings(
        llm: &crate::config::LlmSettings,
        timeout: Option<f64>,
    ) -> Result<ClientConfig, LlmError> {
        let api_key = match &llm.api_key_env {
            None => None,
            Some(var) => match std::env::var(var) {
                Ok(k) if !k.trim().is_empty() => Some(Secret::new(k.trim())),
                _ => return Err(LlmError::MissingKey(var.clone())),
            },
        };
        let secs = timeout.unwrap_or(llm.timeout).max(0.1);
        Ok(ClientConfig {
            base_url: llm.base_url.trim_end_matches('/').to_string(),
            model: llm.model.clone(),
            api_key,
            api_key_env: llm.api_key_env.clone(),
            max_tokens: llm.max_tokens,
            max_answer_bytes: llm.max_answer_kb.saturating_mul(1024),
            connect_timeout: Duration::from_secs_f64(secs.min(10.0)),
            timeout: Duration::from_secs_f64(secs),
            stall: Duration::from_secs_f64((secs / 2.0).min(60.0)),
            retries: 3,
            backoff: Duration::from_millis(500),
        })
    }
}

pub struct Client {
    http: reqwest::Client,
    cfg: ClientConfig,
}

enum Attempt {
    Done(Answer),
    Retry { error: LlmError, after: Option<Duration> },
    Fail(LlmError),
}

impl Client {
    pub fn new(cfg: ClientConfig) -> Result<Client, LlmError> {
        let http = reqwest::Client::builder()
            .connect_timeout(cfg.connect_timeout)
            .build()
            .map_err(|e| LlmError::Setup(format!("cannot build the HTTP client: {e}")))?;
        Ok(Client { http, cfg })
    }

    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    fn url(&self) -> String {
        format!("{}/chat/completions", self.cfg.base_url)
    }

    /// Whether anything accepts a connection at the endpoint's host and port
    /// (no request is sent): asked before any benchmark runs, so a missing
    /// LLM is said at once. `default_endpoint`: the URL is the built-in
    /// default, so nothing answering there means no LLM was configured.
    pub async fn check_reachable(&self, default_endpoint: bool) -> Result<(), LlmError> {
        let url = self.url();
        let fail = |reason: String| match default_endpoint {
            true => LlmError::NotConfigured { url: self.cfg.base_url.clone(), reason },
            false => LlmError::Unreachable { url: url.clone(), reason },
        };
        let parsed = reqwest::Url::parse(&url).map_err(|e| fail(format!("not a URL: {e}")))?;
        let host = parsed.host_str().ok_or_else(|| fail("the URL has no host".into()))?.to_string();
        let port = parsed.port_or_known_default().unwrap_or(80);
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        match tokio::time::timeout(self.cfg.connect_timeout, tokio::net::TcpStream::connect((host.as_str(), port)))
            .await
        {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(fail(e.to_string())),
            Err(_) => {
                Err(fail(format!("no answer to a connection within {:.0} s", self.cfg.connect_timeout.as_secs_f64())))
            }
        }
    }

    /// One streamed chat completion, retried on 429/5xx within the timeout.
    pub async fn chat(&self, messages: &[Message]) -> Result<Answer, LlmError> {
        let start = Instant::now();
        let deadline = tokio::time::Instant::now() + self.cfg.timeout;
        let timeout_err = || LlmError::Timeout { secs: self.cfg.timeout.as_secs_f64() };
        let mut attempts = 0u32;
        loop {
            attempts += 1;
            let outcome = match tokio::time::timeout_at(deadline, self.attempt(messages, start, attempts)).await {
                Ok(o) => o,
                Err(_) => return Err(timeout_err()),
            };
            match outcome {
                Attempt::Done(answer) => return Ok(answer),
                Attempt::Fail(error) => return Err(error),
                Attempt::Retry { error, after } => {
                    if attempts > self.cfg.retries {
                        return Err(error);
                    }
                    let backoff = self.cfg.backoff * 2u32.saturating_pow(attempts - 1);
                    let wait = after.unwrap_or(backoff).min(Duration::from_secs(60));
                    if tokio::time::Instant::now() + wait >= deadline {
                        return Err(error);
                    }
                    tracing::info!("LLM call failed ({error}); retrying in {:.1} s", wait.as_secs_f64());
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }

    async fn attempt(&self, messages: &[Message], start: Instant, attempts: u32) -> Attempt {
        let url = self.url();
        let body = serde_json::json!({
            "model": self.cfg.model,
            "messages": messages,
            "stream": true,
            "stream_options": {"include_usage": true},
            "max_tokens": self.cfg.max_tokens,
            "temperature": 0.7,
        });
        let mut request = self.http.post(&url).json(&body);
        if let Some(key) = &self.cfg.api_key {
            // bearer_auth marks the header sensitive: hyper never prints it.
            request = request.bearer_auth(&key.0);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return Attempt::Fail(LlmError::Unreachable { url, reason: self.scrub(&error_chain(&e)) }),
        };
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse::<f64>().ok())
                .map(|s| Duration::from_secs_f64(s.clamp(0.0, 60.0)));
            let text = tokio::time::timeout(self.cfg.stall, response.text()).await.ok().and_then(Result::ok);
            let body = self.scrub(&excerpt(text.as_deref().unwrap_or(""), 300));
            if status == 401 || status == 403 {
                let var = self.cfg.api_key_env.clone().unwrap_or_else(|| "<none: llm.api-key-env is not set>".into());
                return Attempt::Fail(LlmError::Unauthorized { url, status, var, body });
            }
            let error = LlmError::Http { url, status, attempts, body };
            if status == 429 || status >= 500 {
                return Attempt::Retry { error, after: retry_after };
            }
            return Attempt::Fail(error);
        }
        let body = bounded(response.bytes_stream(), self.cfg.stall, self.cfg.max_answer_bytes);
        let mut reader = StreamReader::default();
        if let Err(e) = reader.read(body).await {
            return Attempt::Fail(self.scrub_error(e));
        }
        match reader.finish(messages, self.cfg.max_tokens) {
            Ok((text, usage, finish_reason)) => {
                Attempt::Done(Answer { text, usage, finish_reason, latency: start.elapsed() })
            }
            Err(e) => Attempt::Fail(self.scrub_error(e)),
        }
    }

    fn scrub(&self, text: &str) -> String {
        match &self.cfg.api_key {
            Some(k) => k.scrub(text),
            None => text.to_string(),
        }
    }

    fn scrub_error(&self, e: LlmError) -> LlmError {
        match e {
            LlmError::Garbage(m) => LlmError::Garbage(self.scrub(&m)),
            LlmError::Truncated(m) => LlmError::Truncated(self.scrub(&m)),
            other => other,
        }
    }
}

/// The error and its sources on one line (reqwest's own text omits the cause).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let text = s.to_string();
        if !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        source = s.source();
    }
    out
}

/// The first `max` characters of `text` on one line.
pub(crate) fn excerpt(text: &str, max: usize) -> String {
    let flat: String = text.trim().chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
    let mut out: String = flat.chars().take(max).collect();
    if flat.chars().count() > max {
        out.push('…');
    }
    if out.is_empty() {
        out.push_str("(empty body)");
    }
    out
}

/// Why the bytes of an answer stopped coming other than at their end (see [`bounded`]).
#[derive(Debug)]
enum BodyEnd {
    Stalled(Duration),
    TooLarge(u64),
    Broke(String),
}

impl std::fmt::Display for BodyEnd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BodyEnd::Stalled(d) => write!(f, "no bytes for {:.1} s", d.as_secs_f64()),
            BodyEnd::TooLarge(max) => write!(f, "more than {max} bytes"),
            BodyEnd::Broke(why) => write!(f, "the connection broke: {why}"),
        }
    }
}

impl std::error::Error for BodyEnd {}

impl From<BodyEnd> for LlmError {
    fn from(end: BodyEnd) -> LlmError {
        match end {
            BodyEnd::Stalled(d) => LlmError::Stalled { secs: d.as_secs_f64() },
            BodyEnd::TooLarge(max) => LlmError::TooLarge { kb: max / 1024 },
            BodyEnd::Broke(why) => LlmError::Truncated(format!("the connection broke: {why}")),
        }
    }
}

/// The chunks of an answer's body, each awaited at most `stall`, at most
/// `max_bytes` in all: past either bound (or a broken connection) the stream
/// yields that [`BodyEnd`] and ends.
fn bounded<E: std::error::Error>(
    chunks: impl Stream<Item = Result<Bytes, E>> + Unpin,
    stall: Duration,
    max_bytes: u64,
) -> impl Stream<Item = Result<Bytes, BodyEnd>> + Unpin {
    Box::pin(futures_util::stream::unfold(Some((chunks, 0u64)), move |state| async move {
        let (mut chunks, seen) = state?;
        let end = match tokio::time::timeout(stall, chunks.next()).await {
            Err(_) => BodyEnd::Stalled(stall),
            Ok(None) => return None,
            Ok(Some(Err(e))) => BodyEnd::Broke(error_chain(&e)),
            Ok(Some(Ok(bytes))) => {
                let seen = seen + bytes.len() as u64;
                if seen <= max_bytes {
                    return Some((Ok(bytes), Some((chunks, seen))));
                }
                BodyEnd::TooLarge(max_bytes)
            }
        };
        Some((Err(end), None))
    }))
}

/// Reads an answer: SSE events (decoded by `sse-stream`, which refuses a line
/// that is not an SSE field) whose data are chat-completion chunks, ending
/// with `[DONE]`, or (from servers that do not stream) one completion object.
#[derive(Default)]
struct StreamReader {
    text: String,
    usage: Option<Usage>,
    finish_reason: Option<String>,
    done: bool,
    /// The bytes of the body read.
    bytes: usize,
}

impl StreamReader {
    /// Reads `body` (see [`bounded`]) until `[DONE]` or its end.
    async fn read(&mut self, mut body: impl Stream<Item = Result<Bytes, BodyEnd>> + Unpin) -> Result<(), LlmError> {
        // The kind of body, from its first bytes that are not white space.
        let mut head: Vec<Bytes> = Vec::new();
        let mut seen: Vec<u8> = Vec::new();
        let start = loop {
            let Some(bytes) = body.next().await.transpose()? else {
                return Err(LlmError::Garbage("the body is empty".into()));
            };
            seen.extend_from_slice(&bytes);
            head.push(bytes);
            let start = String::from_utf8_lossy(&seen).trim_start().to_string();
            if !start.is_empty() {
                break start;
            }
        };
        if start.starts_with('{') {
            // A server that ignored `stream: true` and sent one JSON object.
            let mut all = seen;
            while let Some(bytes) = body.next().await.transpose()? {
                all.extend_from_slice(&bytes);
            }
            let all = String::from_utf8_lossy(&all).to_string();
            let value: Value = serde_json::from_str(&all)
                .map_err(|_| LlmError::Garbage(format!("the body is not JSON: `{}`", excerpt(&all, 80))))?;
            self.chunk(&value, "message")?;
            self.done = true;
            return Ok(());
        }
        if !["data:", ":", "event:", "id:", "retry:"].iter().any(|p| start.starts_with(p)) {
            return Err(LlmError::Garbage(format!("it begins with `{}`", excerpt(&start, 80))));
        }
        let bytes = std::sync::atomic::AtomicUsize::new(0);
        let counted = futures_util::stream::iter(head.into_iter().map(Ok)).chain(body).inspect(|chunk| {
            if let Ok(chunk) = chunk {
                bytes.fetch_add(chunk.len(), std::sync::atomic::Ordering::Relaxed);
            }
        });
        let mut events = SseByteStream::new(counted);
        let read = self.events(&mut events).await;
        self.bytes = bytes.into_inner();
        read
    }

    async fn events<S>(&mut self, events: &mut SseByteStream<S>) -> Result<(), LlmError>
    where
        S: futures_util::TryStream<Ok = Bytes, Error = BodyEnd> + Unpin,
    {
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| match e {
                sse_stream::Error::Body(e) => match e.downcast::<BodyEnd>() {
                    Ok(end) => LlmError::from(*end),
                    Err(other) => LlmError::Truncated(format!("the stream failed: {other}")),
                },
                sse_stream::Error::Utf8Parse(_) => LlmError::Garbage("a line of the stream is not UTF-8".into()),
                _ => LlmError::Garbage(
                    "a line of the stream is not an SSE field (`data:`, `event:`, `id:`, `retry:`, a `:` comment)"
                        .into(),
                ),
            })?;
            let Some(data) = event.data else { continue };
            let data = data.trim();
            if data == "[DONE]" {
                self.done = true;
                break;
            }
            let value: Value = serde_json::from_str(data)
                .map_err(|_| LlmError::Garbage(format!("a data line is not JSON: `{}`", excerpt(data, 80))))?;
            self.chunk(&value, "delta")?;
        }
        Ok(())
    }

    fn chunk(&mut self, value: &Value, field: &str) -> Result<(), LlmError> {
        if let Some(err) = value.get("error") {
            let message =
                err.get("message").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| err.to_string());
            return Err(LlmError::Truncated(format!("the server reported an error: {}", excerpt(&message, 200))));
        }
        if let Some(choice) = value.get("choices").and_then(|c| c.get(0)) {
            if let Some(content) = choice.get(field).and_then(|d| d.get("content")).and_then(Value::as_str) {
                self.text.push_str(content);
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                self.finish_reason = Some(reason.to_string());
            }
        } else if value.get("usage").is_none() {
            return Err(LlmError::Garbage(format!("a chunk has no `choices`: `{}`", excerpt(&value.to_string(), 80))));
        }
        if let Some(u) = value.get("usage").filter(|u| u.is_object()) {
            let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
            self.usage = Some(Usage {
                prompt_tokens: n("prompt_tokens"),
                completion_tokens: n("completion_tokens"),
                estimated: false,
            });
        }
        Ok(())
    }

    /// The answer, once the body has been read.
    fn finish(self, messages: &[Message], max_tokens: u32) -> Result<(String, Usage, Option<String>), LlmError> {
        if !self.done && self.finish_reason.is_none() {
            return Err(LlmError::Truncated(format!(
                "the stream ended after {} bytes ({} characters of answer) without `[DONE]` or a finish_reason",
                self.bytes,
                self.text.chars().count()
            )));
        }
        if self.finish_reason.as_deref() == Some("length") {
            return Err(LlmError::Truncated(format!(
                "the answer reached max_tokens = {max_tokens} before it ended; raise llm.max-tokens"
            )));
        }
        let usage = self.usage.unwrap_or_else(|| Usage {
            prompt_tokens: messages.iter().map(|m| m.content.len() as u64 / 4).sum(),
            completion_tokens: self.text.len() as u64 / 4,
            estimated: true,
        });
        Ok((self.text, usage, self.finish_reason))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Chunk = Result<Bytes, std::io::Error>;

    /// Reads `chunks` as the client reads a body, bounded by `stall` and `max_bytes`.
    fn read_chunks(
        chunks: impl Stream<Item = Chunk> + Unpin,
        stall: Duration,
        max_bytes: u64,
    ) -> Result<(String, Usage, Option<String>), LlmError> {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().expect("a runtime");
        rt.block_on(async {
            let mut r = StreamReader::default();
            r.read(bounded(chunks, stall, max_bytes)).await?;
            r.finish(&[Message::user("abcdefgh")], 100)
        })
    }

    /// `body` in pieces of 7 bytes, so that lines and events are split.
    fn pieces(body: &str) -> Vec<Chunk> {
        body.as_bytes().chunks(7).map(|p| Ok(Bytes::copy_from_slice(p))).collect()
    }

    fn read(body: &str) -> Result<(String, Usage, Option<String>), LlmError> {
        read_chunks(futures_util::stream::iter(pieces(body)), Duration::from_secs(5), 1 << 20)
    }

    const HELLO: &str = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n";

    #[test]
    fn a_line_that_is_no_sse_field_is_garbage() {
        let body = format!("{HELLO}<html>oops</html>\n\ndata: [DONE]\n\n");
        assert!(matches!(read(&body), Err(LlmError::Garbage(m)) if m.contains("not an SSE field")));
    }

    #[test]
    fn comments_events_and_ids_are_skipped_and_crlf_ends_lines() {
        let body =
            format!(": keep-alive\r\nevent: chunk\r\nid: 1\r\n{}data: [DONE]\r\n\r\n", HELLO.replace('\n', "\r\n"));
        assert_eq!(read(&body).unwrap().0, "Hel");
    }

    #[test]
    fn a_body_past_the_size_bound_is_too_large() {
        let body = format!("{}data: [DONE]\n\n", HELLO.repeat(20));
        let got = read_chunks(futures_util::stream::iter(pieces(&body)), Duration::from_secs(5), 300);
        assert!(matches!(got, Err(LlmError::TooLarge { .. })), "{:?}", got.err());
    }

    #[test]
    fn a_body_that_stops_coming_is_stalled() {
        let stops = futures_util::stream::iter(pieces(HELLO)).chain(futures_util::stream::pending());
        let got = read_chunks(stops, Duration::from_millis(50), 1 << 20);
        assert!(matches!(got, Err(LlmError::Stalled { .. })), "{:?}", got.err());
    }

    #[test]
    fn a_broken_connection_is_truncated() {
        let broke = futures_util::stream::iter(pieces(HELLO))
            .chain(futures_util::stream::iter([Err(std::io::Error::other("reset by peer"))]));
        let got = read_chunks(broke, Duration::from_secs(5), 1 << 20);
        assert!(matches!(got, Err(LlmError::Truncated(m)) if m.contains("reset by peer")));
    }

    #[test]
    fn sse_chunks_concatenate_and_usage_is_read() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\n\
                    data: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\n\
                    data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":2}}\n\n\
                    data: [DONE]\n\n";
        let (text, usage, reason) = read(body).unwrap();
        assert_eq!(text, "Hello");
        assert_eq!(usage, Usage { prompt_tokens: 5, completion_tokens: 2, estimated: false });
        assert_eq!(reason.as_deref(), Some("stop"));
    }

    #[test]
    fn missing_usage_is_estimated() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"12345678\"}}]}\n\ndata: [DONE]\n\n";
        let (_, usage, _) = read(body).unwrap();
        assert_eq!(usage, Usage { prompt_tokens: 2, completion_tokens: 2, estimated: true });
    }

    #[test]
    fn a_stream_without_done_is_truncated() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"def f(\"}}]}\n\n";
        assert!(matches!(read(body), Err(LlmError::Truncated(_))));
    }

    #[test]
    fn html_is_garbage() {
        assert!(matches!(read("<html>502 Bad Gateway</html>"), Err(LlmError::Garbage(_))));
    }

    #[test]
    fn a_non_streaming_answer_is_accepted() {
        let body = "{\"choices\":[{\"message\":{\"content\":\"hi\"},\"finish_reason\":\"stop\"}]}";
        assert_eq!(read(body).unwrap().0, "hi");
    }

    #[test]
    fn secrets_are_not_printed() {
        let s = Secret::new("sk-very-secret");
        assert_eq!(format!("{s:?}"), "Secret(***)");
        assert_eq!(s.scrub("bad key sk-very-secret!"), "bad key ***!");
    }
}
