"""A loopback OpenAI-compatible chat-completions server that replays recorded
answers (tests/fixtures/llm/*.md) as a streamed (SSE) response, the way the
Rust tests' llm_mock does. It stands in for the remote LLM only: everything
else in the end-to-end test is real.

Standalone: `python llm_replay.py ANSWER.md [PORT]` serves until killed and
prints its base URL. Imported: `start(answers)` serves on a thread.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def sse_chunks(answer):
    """The answer as chat.completion.chunk events, then finish, usage and [DONE]."""
    out = []
    for i in range(0, len(answer), 120):
        chunk = {
            "id": "replay",
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": answer[i : i + 120]}, "finish_reason": None}],
        }
        out.append(f"data: {json.dumps(chunk)}\n\n")
    out.append(f"data: {json.dumps({'id': 'replay', 'choices': [{'index': 0, 'delta': {}, 'finish_reason': 'stop'}]})}\n\n")
    usage = {"prompt_tokens": 1000, "completion_tokens": len(answer) // 4, "total_tokens": 1000 + len(answer) // 4}
    out.append(f"data: {json.dumps({'id': 'replay', 'choices': [], 'usage': usage})}\n\n")
    out.append("data: [DONE]\n\n")
    return out


class Replay(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answers, port=0):
        super().__init__(("127.0.0.1", port), Handler)
        self.answers = answers
        self.requests = []
        self.lock = threading.Lock()

    @property
    def base_url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        server = self.server
        with server.lock:
            n = len(server.requests)
            server.requests.append({"path": self.path, "body": json.loads(body or b"null")})
        if not self.path.endswith("/chat/completions"):
            self.send_error(404, "only /v1/chat/completions is served")
            return
        answer = server.answers[min(n, len(server.answers) - 1)]
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for chunk in sse_chunks(answer):
            self.wfile.write(chunk.encode())
            self.wfile.flush()
        self.close_connection = True


def start(answers, port=0):
    """Serves `answers` in order (the last one again for later requests) on a thread."""
    server = Replay(list(answers), port)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: llm_replay.py ANSWER.md [PORT]")
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    srv = Replay([text], int(sys.argv[2]) if len(sys.argv) > 2 else 0)
    print(srv.base_url, flush=True)
    srv.serve_forever()
