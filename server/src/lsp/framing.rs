//! Reads LSP frames from stdin and passes only well-formed JSON-RPC on to
//! tower-lsp-server.
//!
//! tower-lsp-server stops reading its input after the first frame it cannot
//! decode (invalid JSON, or JSON that is not JSON-RPC), which would end the
//! session over one bad message. Here a bad body becomes a request for
//! [`INVALID_MESSAGE`] carrying the original id where it had a usable one, so
//! the client still gets an error response (parse error or invalid request)
//! and the session goes on. Malformed headers are skipped up to the next frame.

use std::pin::Pin;
use std::task::{Context, Poll};

use serde::Serialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tracing::warn;

/// The method a bad message is replaced with; its handler answers with the error.
pub const INVALID_MESSAGE: &str = "$/kernel-lsp/invalidMessage";

/// Refuses bodies larger than this rather than allocating whatever a header claims.
const MAX_BODY: usize = 256 << 20;

/// Copies frames from `input` to `output` until `input` ends or the client
/// sends `exit` (some clients keep stdin open after it).
pub async fn sanitize(input: impl AsyncRead + Unpin, mut output: impl AsyncWrite + Unpin) {
    let mut reader = BufReader::new(input);
    loop {
        let length = match read_headers(&mut reader).await {
            Ok(Some(n)) => n,
            Ok(None) => break,
            Err(e) => {
                warn!("skipping a malformed frame header: {e}");
                continue;
            }
        };
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).await.is_err() {
            break;
        }
        tracing::trace!("frame of {} bytes read", body.len());
        let mut exit = false;
        let body = match check(&body) {
            Ok(is_exit) => {
                exit = is_exit;
                body
            }
            Err(replacement) => {
                warn!("replacing a malformed message: {}", String::from_utf8_lossy(&body[..body.len().min(200)]));
                replacement.to_string().into_bytes()
            }
        };
        let header = format!("Content-Length: {}\r\n\r\n", body.len());
        if output.write_all(header.as_bytes()).await.is_err() || output.write_all(&body).await.is_err() {
            break;
        }
        let _ = output.flush().await;
        if exit {
            break;
        }
    }
    let _ = output.shutdown().await;
}

/// Standard input read on the thread that serves it, where it is a pipe
/// (what editors give a language server): non-blocking, watched by
/// the runtime's event loop, so that a frame from the client wakes the
/// serving thread itself. `tokio::io::stdin` reads on a thread of the
/// runtime's blocking pool, which then wakes the serving thread: one more
/// thread to wake per message. `None` (stdin left as it is) for a file, a
/// terminal or a socket, or where it cannot be watched.
#[cfg(unix)]
pub(crate) fn watched_stdin() -> Option<impl AsyncRead + Unpin> {
    watched(0)
}

#[cfg(not(unix))]
pub(crate) fn watched_stdin() -> Option<tokio::io::Stdin> {
    None
}

/// [`watched_stdin`] for any descriptor `fd` that stays open for the life of the process.
#[cfg(unix)]
fn watched(fd: std::os::fd::RawFd) -> Option<impl AsyncRead + Unpin> {
    use std::os::fd::{AsRawFd, RawFd};
    use tokio::io::unix::AsyncFd;
    use tokio::io::Interest;

    struct Fd(RawFd);
    impl AsRawFd for Fd {
        fn as_raw_fd(&self) -> RawFd {
            self.0
        }
    }
    struct Watched(AsyncFd<Fd>);
    impl AsyncRead for Watched {
        fn poll_read(
            self: Pin<&mut Self>,
            cx: &mut Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> Poll<std::io::Result<()>> {
            loop {
                let mut guard = match self.0.poll_read_ready(cx) {
                    Poll::Ready(Ok(guard)) => guard,
                    Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                    Poll::Pending => return Poll::Pending,
                };
                let unfilled = buf.initialize_unfilled();
                let read = guard.try_io(|_| {
                    // SAFETY: reads into the unfilled part of a buffer we own, from a descriptor open for the process's life.
                    let n = unsafe { libc::read(self.0.as_raw_fd(), unfilled.as_mut_ptr().cast(), unfilled.len()) };
                    usize::try_from(n).map_err(|_| std::io::Error::last_os_error())
                });
                match read {
                    Ok(Ok(n)) => {
                        buf.advance(n);
                        return Poll::Ready(Ok(()));
                    }
                    Ok(Err(e)) => return Poll::Ready(Err(e)),
                    // Not readable after all: wait for the next readiness.
                    Err(_would_block) => continue,
                }
            }
        }
    }
    // SAFETY: fstat and fcntl only read the descriptors' types and flags,
    // and set this one's O_NONBLOCK flag (a pipe made for this server).
    let flags = unsafe {
        let (mut st, mut out): (libc::stat, libc::stat) = (std::mem::zeroed(), std::mem::zeroed());
        if libc::fstat(fd, &mut st) != 0 || st.st_mode & libc::S_IFMT != libc::S_IFIFO {
            return None;
        }
        // The flag belongs to the open pipe, not the descriptor: stdout on
        // the same pipe (one opened for reading and writing) would turn
        // non-blocking too. A socket is left alone for the same reason:
        // clients hand one socket as both stdin and stdout.
        if libc::fstat(1, &mut out) == 0 && (out.st_dev, out.st_ino) == (st.st_dev, st.st_ino) {
            return None;
        }
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return None;
        }
        flags
    };
    // SAFETY: the descriptor stays open, and the same pipe, for the life of the process.
    match unsafe { AsyncFd::register_with_interest(Fd(fd), Interest::READABLE) } {
        Ok(watched) => Some(Watched(watched)),
        Err(_) => {
            // SAFETY: puts back the flags read above; `tokio::io::stdin` reads blocking.
            unsafe { libc::fcntl(fd, libc::F_SETFL, flags) };
            None
        }
    }
}

/// The body length from one header block; `Ok(None)` at end of input.
async fn read_headers(reader: &mut (impl AsyncBufReadExt + Unpin)) -> Result<Option<usize>, String> {
    let mut length = None;
    let mut saw_any = false;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line).await {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) => return Err(e.to_string()),
        }
        let line = line.trim_end_matches(['\r', '\n']);
        if line.is_empty() {
            if saw_any {
                break;
            }
            continue; // stray blank line between frames
        }
        saw_any = true;
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse::<usize>().ok();
            }
        }
    }
    match length {
        Some(n) if n <= MAX_BODY => Ok(Some(n)),
        Some(n) => Err(format!("Content-Length {n} is too large")),
        None => Err("no valid Content-Length".to_string()),
    }
}

fn valid_id(id: &Value) -> bool {
    id.is_null() || id.is_string() || id.is_i64() || id.is_u64() && id.as_i64().is_some()
}

/// Ok (with whether it is `exit`) when tower-lsp-server can decode `body`;
/// otherwise the request to send in its place. One parse per message.
fn check(body: &[u8]) -> Result<bool, Value> {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Err(json!({"jsonrpc": "2.0", "id": null, "method": INVALID_MESSAGE, "params": {"parse": true}}));
    };
    let id = value.get("id").filter(|id| valid_id(id)).cloned().unwrap_or(Value::Null);
    let invalid = json!({"jsonrpc": "2.0", "id": id, "method": INVALID_MESSAGE, "params": {"parse": false}});
    let Some(obj) = value.as_object() else {
        return Err(invalid);
    };
    if obj.get("jsonrpc") != Some(&json!("2.0")) {
        return Err(invalid);
    }
    if let Some(id) = obj.get("id") {
        if !valid_id(id) {
            return Err(invalid);
        }
    }
    match obj.get("method") {
        Some(Value::String(m)) => Ok(m == "exit"),
        Some(_) => Err(invalid),
        None => {
            // A response to one of our requests.
            let error_ok = obj.get("error").is_none_or(|e| {
                e.get("code").is_some_and(Value::is_i64) && e.get("message").is_some_and(Value::is_string)
            });
            if obj.contains_key("id") && (obj.contains_key("result") || obj.contains_key("error")) && error_ok {
                Ok(false)
            } else {
                Err(invalid)
            }
        }
    }
}

/// What the output writer is sent: a whole frame, or a request to report once
/// everything sent before has been written.
pub enum Out {
    /// A frame: the bytes from the given one on (see [`Frames::notify_with`]).
    Frame(Vec<u8>, usize),
    Flushed(oneshot::Sender<()>),
}

/// Queues frames for stdout next to tower-lsp-server's own, so that a
/// notification can be written straight from its typed parameters:
/// `Client::publish_diagnostics` first turns the parameters into a
/// `serde_json::Value` tree, which for a 5,000-line file's diagnostics (about
/// 110 KB of JSON) took longer than the rest of the output path together.
#[derive(Clone)]
pub struct Frames(mpsc::UnboundedSender<Out>);

impl Frames {
    /// Sends a JSON-RPC notification; false if the writer has stopped.
    pub fn notify(&self, method: &str, params: &impl Serialize) -> bool {
        self.notify_with(method, 0, |out| serde_json::to_writer(out, params).is_ok())
    }

    /// [`Self::notify`] with the parameters written as JSON by `params`
    /// (false: nothing to send) straight into the frame, behind room left
    /// for the header: no copy of a large body. `size` is a guess of the
    /// frame's length, to allocate once.
    pub(crate) fn notify_with(&self, method: &str, size: usize, params: impl FnOnce(&mut Vec<u8>) -> bool) -> bool {
        let mut frame = Vec::with_capacity(HEADER_ROOM + size);
        frame.resize(HEADER_ROOM, b' ');
        frame.extend_from_slice(br#"{"jsonrpc":"2.0","method":"#);
        if serde_json::to_writer(&mut frame, method).is_err() {
            return false;
        }
        frame.extend_from_slice(br#","params":"#);
        if !params(&mut frame) {
            return false;
        }
        frame.push(b'}');
        let header = format!("Content-Length: {}\r\n\r\n", frame.len() - HEADER_ROOM);
        let from = HEADER_ROOM - header.len();
        frame[from..HEADER_ROOM].copy_from_slice(header.as_bytes());
        self.0.send(Out::Frame(frame, from)).is_ok()
    }
}

/// Room before a body for its header: `Content-Length: ` and a `usize`, then `\r\n\r\n`.
const HEADER_ROOM: usize = 16 + 20 + 4;

/// The output of the server: [`Frames`] for our own messages, a
/// [`FrameSplitter`] for tower-lsp-server's, and the receiver for [`write_frames`].
pub fn output() -> (Frames, FrameSplitter, mpsc::UnboundedReceiver<Out>) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Frames(tx.clone()), FrameSplitter { buf: Vec::new(), tx }, rx)
}

/// The writer tower-lsp-server gets: it cuts what it is given into whole
/// frames (by their `Content-Length`) and queues them, so that our own frames
/// are only ever written between two of its frames.
pub struct FrameSplitter {
    buf: Vec<u8>,
    tx: mpsc::UnboundedSender<Out>,
}

/// Length of the first whole frame in `buf`; the whole buffer if its header cannot be read.
fn frame_len(buf: &[u8]) -> Option<usize> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let length = std::str::from_utf8(&buf[..end]).ok().and_then(|headers| {
        headers.lines().find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.trim().eq_ignore_ascii_case("content-length").then(|| value.trim().parse::<usize>().ok())?
        })
    });
    match length {
        Some(n) => (buf.len() >= end + n).then_some(end + n),
        None => Some(buf.len()),
    }
}

impl AsyncWrite for FrameSplitter {
    fn poll_write(self: Pin<&mut Self>, _: &mut Context<'_>, data: &[u8]) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        this.buf.extend_from_slice(data);
        while let Some(n) = frame_len(&this.buf) {
            let rest = this.buf.split_off(n);
            let frame = std::mem::replace(&mut this.buf, rest);
            if this.tx.send(Out::Frame(frame, 0)).is_err() {
                return Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()));
            }
        }
        Poll::Ready(Ok(data.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// Writes queued frames to `out` in order, flushing after each burst; run on
/// a thread of its own (a frame is written by the thread it wakes, not handed
/// on again to the runtime's blocking pool as `tokio::io::stdout` does).
pub(crate) fn write_frames(mut rx: mpsc::UnboundedReceiver<Out>, mut out: impl std::io::Write) {
    while let Some(first) = rx.blocking_recv() {
        let mut next = Some(first);
        while let Some(item) = next.take() {
            match item {
                Out::Frame(frame, from) => {
                    if out.write_all(&frame[from..]).is_err() {
                        return;
                    }
                }
                Out::Flushed(done) => {
                    let _ = out.flush();
                    let _ = done.send(());
                }
            }
            next = rx.try_recv().ok();
        }
        if out.flush().is_err() {
            return;
        }
    }
}

/// Standard output for [`write_frames`], unbuffered: `std::io::stdout()` is
/// line-buffered, so a frame's header (it ends in a newline) went out in a
/// write of its own and woke the client once for the header and again for
/// the body. The frame is written whole, in one `write` where the pipe has room.
pub struct RawStdout(std::mem::ManuallyDrop<std::fs::File>);

impl RawStdout {
    pub fn new() -> RawStdout {
        use std::os::fd::FromRawFd;
        // SAFETY: fd 1 stays open for the life of the process; `ManuallyDrop` never closes it.
        RawStdout(std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) }))
    }
}

impl Default for RawStdout {
    fn default() -> Self {
        Self::new()
    }
}

impl std::io::Write for RawStdout {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::io::Write::write(&mut &*self.0, buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Makes the pipe `fd` writes into hold `bytes` (Linux; where it is a pipe and
/// the size allowed), so that a large publication is written in one go rather
/// than in turns with the client's reads. Says whether it was done.
pub(crate) fn widen_pipe(fd: i32, bytes: i32) -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: F_SETPIPE_SZ only resizes the pipe's buffer; on anything else it fails with EBADF or EINVAL.
        unsafe { libc::fcntl(fd, libc::F_SETPIPE_SZ, bytes) >= bytes }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (fd, bytes);
        false
    }
}

/// Waits (at most `limit`) until everything queued before has been written.
pub async fn flushed(frames: &Frames, limit: std::time::Duration) {
    let (tx, rx) = oneshot::channel();
    if frames.0.send(Out::Flushed(tx)).is_ok() {
        let _ = tokio::time::timeout(limit, rx).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_bodies_are_replaced() {
        assert_eq!(check(br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#), Ok(false));
        assert_eq!(check(br#"{"jsonrpc":"2.0","id":1,"result":null}"#), Ok(false));
        assert_eq!(check(br#"{"jsonrpc":"2.0","method":"x"}"#), Ok(false));
        assert_eq!(check(br#"{"jsonrpc":"2.0","method":"exit"}"#), Ok(true));
        assert_eq!(check(b"{not json").unwrap_err()["params"]["parse"], true);
        let bad = check(br#"{"jsonrpc":"2.0","id":7,"method":3}"#).unwrap_err();
        assert_eq!((bad["id"].clone(), bad["params"]["parse"].clone()), (json!(7), json!(false)));
        assert_eq!(check(br#"{"id":1,"method":"x"}"#).unwrap_err()["id"], 1);
        assert_eq!(check(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#).unwrap_err()["id"], Value::Null);
        assert!(check(br#"[1,2]"#).is_err());
        assert!(check(br#"{"jsonrpc":"2.0","id":1,"error":{"code":"x"}}"#).is_err());
    }

    #[test]
    fn our_frames_go_between_whole_frames_of_the_transport() {
        let (frames, mut splitter, rx) = output();
        let first = b"Content-Length: 2\r\n\r\n{}";
        let second = b"Content-Length: 5\r\n\r\n[1,2]";
        // The transport writes in arbitrary pieces; ours comes in the middle of a frame.
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        runtime.block_on(async {
            splitter.write_all(&first[..10]).await.unwrap();
            frames.notify("x", &json!({"a": 1}));
            splitter.write_all(&first[10..]).await.unwrap();
            splitter.write_all(&second[..]).await.unwrap();
        });
        drop((frames, splitter));
        let mut out = Vec::new();
        write_frames(rx, &mut out);
        let out = String::from_utf8(out).unwrap();
        let ours = r#"{"jsonrpc":"2.0","method":"x","params":{"a":1}}"#;
        let expected = format!("Content-Length: {}\r\n\r\n{ours}", ours.len())
            + "Content-Length: 2\r\n\r\n{}Content-Length: 5\r\n\r\n[1,2]";
        assert_eq!(out, expected);
    }

    /// A pipe read through the event loop gives the frames written into it
    /// in pieces, with pauses between (each read that finds nothing waits
    /// for readiness), through to its end; a file is not watched.
    #[test]
    fn a_watched_pipe_gives_whole_frames_written_in_pieces() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let mut fds = [0; 2];
        // SAFETY: pipe() fills the two descriptors, both closed below.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        let body = format!(r#"{{"jsonrpc":"2.0","method":"x","params":"{}"}}"#, "y".repeat(100_000));
        let frame = format!("Content-Length: {}\r\n\r\n{body}", body.len());
        let sent = frame.clone() + &frame;
        let writer = std::thread::spawn(move || {
            for piece in sent.as_bytes().chunks(7_000) {
                // SAFETY: writes our bytes to the pipe's write end, closed below.
                let n = unsafe { libc::write(fds[1], piece.as_ptr().cast(), piece.len()) };
                assert_eq!(n as usize, piece.len());
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            // SAFETY: closing our write end: the reader sees the end of input.
            unsafe { libc::close(fds[1]) };
        });
        let out = runtime.block_on(async {
            let watched = watched(fds[0]).expect("a pipe is watched");
            let mut out = Vec::new();
            sanitize(watched, &mut out).await;
            out
        });
        writer.join().unwrap();
        // SAFETY: the watched reader is gone; closing the read end it used.
        unsafe { libc::close(fds[0]) };
        assert_eq!(String::from_utf8(out).unwrap(), frame.clone() + &frame);
        let file = std::fs::File::open(concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml")).unwrap();
        let none = runtime.block_on(async { watched(std::os::fd::AsRawFd::as_raw_fd(&file)).is_none() });
        assert!(none, "a file is read as it is");
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let none = runtime.block_on(async { watched(std::os::fd::AsRawFd::as_raw_fd(&a)).is_none() });
        assert!(none, "a socket is read as it is (it may be stdout too)");
        // SAFETY: F_GETFL only reads the flags of a descriptor the test owns.
        let mode = |fd| unsafe { libc::fcntl(fd, libc::F_GETFL) } & libc::O_NONBLOCK;
        assert_eq!(mode(std::os::fd::AsRawFd::as_raw_fd(&a)), 0, "left blocking");
    }

    #[tokio::test]
    async fn frames_survive_garbage_headers() {
        let input = b"Content-Length: x\r\n\r\nContent-Length: 2\r\n\r\n{}Content-Length: 39\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"abc\"}";
        let mut out = Vec::new();
        sanitize(&input[..], &mut out).await;
        let out = String::from_utf8(out).unwrap();
        assert!(out.contains(INVALID_MESSAGE), "{out}");
        assert!(out.ends_with("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"abc\"}"), "{out}");
    }
}
