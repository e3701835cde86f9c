"""The program that serves one model of the engine: an OpenAI-compatible HTTP server.

The service starts one copy per launched model, with the port to listen on and the model's file, waits until
GET /health answers 200, then sends it chat and completion requests, always streaming. Whatever it prints goes
to the model's log. On SIGTERM it has a grace period to exit before it is killed.

This demo "runs" a model by echoing the last user message (or the prompt) word by word, using only Python's
standard library. Replace it with your engine's server, or run an existing one (vLLM, SGLang, llama-server)
from register.js instead of this file.
"""
import argparse
import json
import os
import re
import signal
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--model", required=True, help="path of the model's file")
parser.add_argument("--delay-ms", type=int, default=0, help="pause before each word")
options = parser.parse_args()


def words(text):
    """Words with the whitespace before each, so that the streamed pieces join back into the text."""
    return re.findall(r"\s*\S+", text)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):
        pass

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        if self.path == "/health":
            return self.reply(200, {"status": "ok"})
        self.reply(404, {"error": {"message": f"no route GET {self.path}"}})

    def do_POST(self):
        request = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if self.path == "/v1/chat/completions":
            messages = request.get("messages", [])
            text = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
            prompt_tokens = sum(len(words(m.get("content") or "")) for m in messages)
            chat = True
        elif self.path == "/v1/completions":
            text = request.get("prompt") if isinstance(request.get("prompt"), str) else ""
            prompt_tokens = len(words(text))
            chat = False
        else:
            return self.reply(404, {"error": {"message": f"no route POST {self.path}"}})

        every = words(text)
        emitted = every if request.get("max_tokens") is None else every[: request["max_tokens"]]
        finish = "length" if len(emitted) < len(every) else "stop"
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(emitted), "total_tokens": prompt_tokens + len(emitted)}
        base = {"id": "cmpl-demo", "created": int(time.time()), "model": request.get("model", "demo")}
        if not request.get("stream"):
            choice = {"index": 0, "finish_reason": finish}
            choice.update({"message": {"role": "assistant", "content": "".join(emitted)}} if chat else {"text": "".join(emitted)})
            return self.reply(200, {**base, "object": "chat.completion" if chat else "text_completion", "choices": [choice], "usage": usage})
        self.stream(base, chat, emitted, finish, usage, request)

    def stream(self, base, chat, emitted, finish, usage, request):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        kind = "chat.completion.chunk" if chat else "text_completion"

        def send(data):
            self.wfile.write(f"data: {data}\n\n".encode())
            self.wfile.flush()

        def chunk(piece, finish_reason=None):
            choice = {"index": 0, "finish_reason": finish_reason}
            choice.update({"delta": {"content": piece} if piece is not None else {}} if chat else {"text": piece or ""})
            return json.dumps({**base, "object": kind, "choices": [choice]})

        sent = 0
        try:
            for word in emitted:
                time.sleep(options.delay_ms / 1000)
                send(chunk(word))
                sent += 1
            send(chunk(None, finish))
            if (request.get("stream_options") or {}).get("include_usage"):
                send(json.dumps({**base, "object": kind, "choices": [], "usage": usage}))
            send("[DONE]")
        except (BrokenPipeError, ConnectionResetError):
            # The service closes the connection when its client goes away: stop generating.
            print(f"client disconnected after {sent} of {len(emitted)} words", flush=True)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client closing its kept-alive connection is no error worth a traceback in the model's log.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def stop(signum, frame):
    print("stopping on SIGTERM", flush=True)
    sys.exit(0)


if not os.path.isfile(options.model):
    print(f"cannot load the model: {options.model} is not a file", file=sys.stderr, flush=True)
    sys.exit(3)

signal.signal(signal.SIGTERM, stop)
server = Server(("127.0.0.1", options.port), Handler)
print(f"serving {options.model} on port {options.port}", flush=True)
server.serve_forever()
