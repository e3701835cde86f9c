"""The program that serves one model of the engine: an OpenAI-compatible HTTP server.

The service starts one copy per launched model, with the port to listen on and the model's file, waits until
GET /health answers 200, then sends it chat and completion requests, always streaming. Whatever it prints goes
to the model's log. On SIGTERM it has a grace period to exit before it is killed.

This demo "runs" a model by echoing the last user message (or the prompt) word by word, using only Python's
standard library and the service's HTTP helper (service_http). Replace it with your engine's server, or run an
existing one (vLLM, SGLang, llama-server) from register.js instead of this file.
"""
import argparse
import os
import re
import sys
import time

# The service puts its helper on the PYTHONPATH of every engine program it starts: JSON and server-sent event
# answers, GET /health, errors as 4xx/5xx, SIGTERM. To run this file by hand, add the service's python/ folder
# (node_modules/service-toolkit/python) to PYTHONPATH.
from service_http import JsonHandler, serve

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--model", required=True, help="path of the model's file")
parser.add_argument("--delay-ms", type=int, default=0, help="pause before each word")
options = parser.parse_args()


def words(text):
    """Words with the whitespace before each, so that the streamed pieces join back into the text."""
    return re.findall(r"\s*\S+", text)


class Handler(JsonHandler):
    protocol_version = "HTTP/1.1"

    def post_routes(self):
        return {"/v1/chat/completions": self.chat, "/v1/completions": self.complete}

    def chat(self, request):
        messages = request.get("messages", [])
        text = next((m.get("content") or "" for m in reversed(messages) if m.get("role") == "user"), "")
        self.answer(request, text, sum(len(words(m.get("content") or "")) for m in messages), chat=True)

    def complete(self, request):
        text = request.get("prompt") if isinstance(request.get("prompt"), str) else ""
        self.answer(request, text, len(words(text)), chat=False)

    def answer(self, request, text, prompt_tokens, chat):
        every = words(text)
        emitted = every if request.get("max_tokens") is None else every[: request["max_tokens"]]
        finish = "length" if len(emitted) < len(every) else "stop"
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(emitted), "total_tokens": prompt_tokens + len(emitted)}
        base = {"id": "cmpl-demo", "created": int(time.time()), "model": request.get("model", "demo")}
        if not request.get("stream"):
            choice = {"index": 0, "finish_reason": finish}
            choice.update({"message": {"role": "assistant", "content": "".join(emitted)}} if chat else {"text": "".join(emitted)})
            return self.send_json(200, {**base, "object": "chat.completion" if chat else "text_completion", "choices": [choice], "usage": usage})
        self.stream(base, chat, emitted, finish, usage, request)

    def stream(self, base, chat, emitted, finish, usage, request):
        self.start_events()
        kind = "chat.completion.chunk" if chat else "text_completion"

        def chunk(piece, finish_reason=None):
            choice = {"index": 0, "finish_reason": finish_reason}
            choice.update({"delta": {"content": piece} if piece is not None else {}} if chat else {"text": piece or ""})
            return {**base, "object": kind, "choices": [choice]}

        sent = 0
        try:
            for word in emitted:
                time.sleep(options.delay_ms / 1000)
                self.send_event(chunk(word))
                sent += 1
            self.send_event(chunk(None, finish))
            if (request.get("stream_options") or {}).get("include_usage"):
                self.send_event({**base, "object": kind, "choices": [], "usage": usage})
            self.send_event("[DONE]")
            self.end_events()
        except (BrokenPipeError, ConnectionResetError):
            # The service closes the connection when its client goes away: stop generating.
            print(f"client disconnected after {sent} of {len(emitted)} words", flush=True)


if not os.path.isfile(options.model):
    print(f"cannot load the model: {options.model} is not a file", file=sys.stderr, flush=True)
    sys.exit(3)

print(f"serving {options.model} on port {options.port}", flush=True)
serve(Handler, options.port)
