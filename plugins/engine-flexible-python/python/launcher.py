"""A flexible model's program for the `python` launcher: imports `launcher_args.module` (from `launcher_args.path` when
given), calls its `launcher_args.function` (default `launcher`) as Xinference calls a launcher,
`function(model_uri, model_description, **kwargs)` with the rest of `launcher_args` as keyword arguments, and serves the
model it returns: POST /infer with {"args": [...], "kwargs": {...}} calls `model.infer(*args, **kwargs)` (or the model
itself when it is a plain function) and answers its result as JSON. A TypeError or ValueError the call raises is the
caller's mistake: a 400 with its message."""
import argparse
import importlib
import json
import sys
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def as_json(value):
    """numpy arrays and scalars, and anything else with `tolist` or `item`, as the plain values JSON has."""
    for method in ("tolist", "item"):
        if hasattr(value, method):
            return getattr(value, method)()
    raise TypeError(f"the model answered a {type(value).__name__}, which is not JSON")


class Handler(BaseHTTPRequestHandler):
    infer = None

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self.send_response(200 if self.path == "/health" else 404)
        self.end_headers()

    def do_POST(self):
        if self.path != "/infer":
            return self.answer(404, {"error": {"message": f"no route {self.path}"}})
        request = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        try:
            result = self.infer(*request.get("args", []), **request.get("kwargs", {}))
            self.answer(200, {"result": json.loads(json.dumps(result, default=as_json))})
        except (TypeError, ValueError) as error:
            self.answer(400, {"error": {"message": f"{type(error).__name__}: {error}"}})
        except Exception as error:  # noqa: BLE001 - the model's own failure is a 500, with its trace in the log
            traceback.print_exc()
            self.answer(500, {"error": {"message": f"{type(error).__name__}: {error}"}})

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model-uri", required=True)
    parser.add_argument("--description", default="")
    parser.add_argument("--launcher-args", default="{}", help="the registration's launcher_args, as JSON")
    options = parser.parse_args()
    launcher_args = dict(json.loads(options.launcher_args))
    module_name = launcher_args.pop("module", None)
    if not module_name:
        sys.exit("launcher_args.module is required for the python launcher: the module whose function loads the model.")
    if launcher_args.get("path"):
        sys.path.insert(0, launcher_args.pop("path"))
    function = getattr(importlib.import_module(module_name), launcher_args.pop("function", "launcher"))
    model = function(options.model_uri, options.description, **launcher_args)
    Handler.infer = staticmethod(model.infer if hasattr(model, "infer") else model)
    print(f"serving {module_name} for {options.model_uri} on port {options.port}", flush=True)
    ThreadingHTTPServer(("127.0.0.1", options.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
