"""What every engine program the service starts needs to speak HTTP on its port, from the standard library only.

The service puts this folder on the PYTHONPATH of every engine program it starts (src/model-process/program-spawner.ts),
so a program in any virtual environment, or on the machine's python3, runs `from service_http import ...`. A program
subclasses `JsonHandler`, names its routes, and calls `serve(Handler, port)`:

    class Handler(JsonHandler):
        def post_routes(self):
            return {"/v1/echo": self.echo}

        def echo(self, request):
            self.send_json(200, request)

    serve(Handler, port)

GET /health answers 200 (a program serves once its model is loaded); an unknown route is a 404; a `BadRequest` a
route raises (or `refusal` makes of another exception) is a 400 naming its field; a client that went away ends the
request quietly; any other exception is a 500 with its reason, its traceback in the model's log. SIGTERM stops the
server and the program exits 0. `load_request()` reads the `--port` and `--request` a program given the load request
starts with; `SpeechHandler` is the /speak route of the programs that stream speech.
"""
import argparse
import json
import signal
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOST = "127.0.0.1"
ERROR_TYPES = {400: "invalid_request_error", 404: "not_found_error"}


class BadRequest(Exception):
    """A request the client must fix: answered 400 with its message and the field (`param`) to change."""

    def __init__(self, message, param=None):
        super().__init__(message)
        self.param = param


class JsonHandler(BaseHTTPRequestHandler):
    """Routes by path to methods taking the parsed JSON body (POST) or nothing (GET)."""

    # Each streamed piece leaves at once: on a kept-alive connection, Nagle's algorithm would hold a piece until the
    # client's delayed acknowledgement of the one before (up to 40 ms, a first token's included).
    disable_nagle_algorithm = True
    # Whether the answer under way is in JSON lines (`line`), where a failure is a line of its own.
    in_lines = False

    def log_message(self, format, *args):
        # The kernel logs every request the service forwards; the program's log keeps what the model says.
        pass

    def get_routes(self):
        """GET paths beyond /health, each to a method of no arguments."""
        return {}

    def post_routes(self):
        """POST paths, each to a method taking the request's JSON body."""
        return {}

    def send_response(self, code, message=None):
        self.answered = True
        super().send_response(code, message)

    def do_GET(self):
        self.answered = False
        self.in_lines = False
        if self.path == "/health":
            return self.send_json(200, {"status": "ok"})
        route = self.get_routes().get(self.path)
        if route is None:
            return self.fail(404, f"no route GET {self.path}")
        route()

    def do_POST(self):
        self.answered = False
        self.in_lines = False
        route = self.post_routes().get(self.path)
        if route is None:
            # Read all the same: on a kept-alive connection, a body left unread would be taken for the next request.
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            return self.fail(404, f"no route POST {self.path}")
        try:
            route(self.read_json())
        except (BrokenPipeError, ConnectionResetError):
            pass
        except Exception as error:  # noqa: BLE001 - the program's own failure is a 500, with its trace in the log
            refusal = error if isinstance(error, BadRequest) else self.refusal(error)
            if refusal is not None:
                return self.fail(400, str(refusal), refusal.param)
            traceback.print_exc()
            sys.stderr.flush()
            self.fail(500, f"{type(error).__name__}: {error}")

    def refusal(self, error):
        """The `BadRequest` an exception from a route amounts to, when it is the caller's mistake; None for a 500."""
        return None

    def read_json(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            return json.loads(body or b"{}")
        except ValueError as error:
            raise BadRequest(f"the request body is not JSON: {error}") from error

    def send_json(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def fail(self, status, message, param=None):
        """An error as OpenAI's API shapes it; once a JSON-lines answer has started, an `{"type": "error"}` line (which
        the service reads as the request's error); once another answer has started, the connection closes instead."""
        if self.in_lines:
            return self.line({"type": "error", "status": status, "message": message, "param": param})
        if self.answered:
            # Too late for a status: the answer stops short, which the service reads as the request failing.
            self.close_connection = True
            return
        self.send_json(status, {"error": {"message": message, "param": param, "type": ERROR_TYPES.get(status, "server_error")}})

    def line(self, event):
        """One JSON line of an answer in JSON lines (the image and video programs' steps and results), its status
        and headers before the first; the connection closes at the answer's end. A failure after the first is a line
        too (see `fail`)."""
        if not self.answered:
            self.send_response(200)
            self.send_header("content-type", "application/x-ndjson")
            self.end_headers()
            self.in_lines = True
            # The answer has no length: its end is the connection's.
            self.close_connection = True
        self.wfile.write((json.dumps(event) + "\n").encode())
        self.wfile.flush()

    def start_stream(self, content_type, headers=None):
        """Starts a 200 answer sent in chunks as they are made (HTTP/1.1 handlers), each by `send_chunk`;
        `end_stream` ends it whole and keeps the connection open for the service's next request."""
        self.chunked = True
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        # Until the answer has ended whole, a failure leaves the connection unusable.
        self.close_connection = True

    def send_chunk(self, data):
        self.wfile.write(b"%x\r\n%b\r\n" % (len(data), data) if self.chunked else data)
        self.wfile.flush()

    def send_chunks(self, chunks):
        """Sends each non-empty chunk of a generator as it is made, then ends the answer and answers None; when the
        client goes away, closes the generator (so its work stops) and answers how many chunks it had made."""
        made = 0
        try:
            for data in chunks:
                if not data:
                    continue
                made += 1
                self.send_chunk(data)
        except (BrokenPipeError, ConnectionResetError):
            chunks.close()
            return made
        self.end_stream()
        return None

    def end_stream(self):
        if self.chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.close_connection = False

    def start_events(self):
        """Starts a server-sent event stream: chunked for a handler speaking HTTP/1.1 (see start_stream), so the
        connection outlives it once `end_events` has ended it whole; otherwise the connection closes at its end."""
        if self.protocol_version == "HTTP/1.1":
            return self.start_stream("text/event-stream", {"Cache-Control": "no-cache"})
        self.chunked = False
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def send_event(self, data):
        """One event: `data` as JSON, or as it is when a string (`[DONE]`); sent at once."""
        self.send_chunk(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n".encode())

    def end_events(self):
        """Ends the stream whole."""
        self.end_stream()


class SpeechHandler(JsonHandler):
    """POST /speak, streamed as 16-bit PCM a sentence a chunk: a subclass's `speak(request)` checks the request
    (raising BadRequest before any audio) and calls `stream_speech` with the sentences' audio."""

    # HTTP/1.1 with chunked transfer: each sentence goes out as a chunk, and the last chunk says the audio is whole
    # (a body that ends by closing the connection reads as a failure to fetch).
    protocol_version = "HTTP/1.1"

    def post_routes(self):
        return {"/speak": self.speak}

    def stream_speech(self, sample_rate, chunks, sentences=None):
        """Streams `chunks` (bytes of PCM, one a sentence); a client that goes away stops it, said in the model's log."""
        self.start_stream("audio/pcm", {"X-Sample-Rate": str(sample_rate)})
        stopped = self.send_chunks(chunks)
        if stopped is not None:
            print(f"speech stopped: the client went away after {stopped}{'' if sentences is None else f' of {sentences}'} sentences", flush=True)


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        # A client closing its kept-alive connection is no error worth a traceback in the model's log.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def load_request():
    """The `--port` to serve on and the load request (`--request`, as JSON) of a program the service starts with one."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--request", required=True, help="the load request, as JSON")
    options = parser.parse_args()
    return options.port, json.loads(options.request)


def serve(handler, port):
    """Serves on 127.0.0.1:`port` until SIGTERM, which lets the program exit 0 (requests in flight end with it)."""
    server = Server((HOST, port), handler)

    def stop(signum, frame):
        print("stopping on SIGTERM", flush=True)
        # shutdown() waits for serve_forever() to return, so it cannot run on the thread that serves.
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    server.serve_forever()
    server.server_close()
