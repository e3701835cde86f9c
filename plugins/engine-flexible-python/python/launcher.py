"""A flexible model's program for the `python` launcher: imports `launcher_args.module` (from `launcher_args.path` when
given), calls its `launcher_args.function` (default `launcher`) as Xinference calls a launcher,
`function(model_uri, model_description, **kwargs)` with the rest of `launcher_args` as keyword arguments, and serves the
model it returns: POST /infer with {"args": [...], "kwargs": {...}} calls `model.infer(*args, **kwargs)` (or the model
itself when it is a plain function) and answers its result as JSON, NaN and ±Infinity as null. A TypeError or
ValueError the call raises is the caller's mistake: a 400 with its message; a result JSON cannot write is the model's,
a 500 naming its type. Calls reach the model one at a time, as Xinference makes them.

The service says which modules may be imported (`--allowed-modules`: the operator's SERVICE_ALLOWED_PYTHON_MODULES as a
JSON list, or `*` where only admins could register a module); any other is refused before anything is imported, so a
registration that reached this machine without the service's check still cannot run code of its choosing."""
import argparse
import importlib
import json
import math
import sys
import threading

from service_http import BadRequest, JsonHandler, serve


class NotJson(Exception):
    """A result JSON cannot write. Not a TypeError, which `refusal` would take for the caller's mistake."""


def as_json(value):
    """The result as the plain values JSON has: numpy arrays and scalars, and anything else with `tolist` or `item`,
    as their lists and numbers; NaN and ±Infinity as null, since JSON has no word for them (Python's `json` would
    write a bare NaN, which no JSON parser reads)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, dict):
        return {as_key(key): as_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [as_json(item) for item in value]
    for method in ("tolist", "item"):
        if hasattr(value, method):
            return as_json(getattr(value, method)())
    raise NotJson(f"the model answered a value of type {type(value).__name__}, which JSON cannot write")


def as_key(key):
    if key is None or isinstance(key, (str, int, float)):
        return key
    if hasattr(key, "item"):
        return as_key(key.item())
    raise NotJson(f"the model answered a dict keyed by a value of type {type(key).__name__}, which JSON cannot write")


class Handler(JsonHandler):
    infer = None
    # The server answers each request on a thread of its own, but a model (a scikit-learn estimator, a transformers
    # pipeline) need not be safe to call from several at once; Xinference, too, runs one call of a model at a time.
    calling = threading.Lock()

    def post_routes(self):
        return {"/infer": self.call}

    def call(self, request):
        with self.calling:
            result = self.infer(*request.get("args", []), **request.get("kwargs", {}))
            # Written before the next call starts: the result may be a buffer the model fills again on its next call.
            written = as_json(result)
        self.send_json(200, {"result": written})

    def refusal(self, error):
        return BadRequest(f"{type(error).__name__}: {error}") if isinstance(error, (TypeError, ValueError)) else None


def module_allowed(module_name, allowed_modules):
    """Whether the module, or a package it belongs to, is listed; `*` allows any."""
    if allowed_modules == "*":
        return True
    return any(module_name == allowed or module_name.startswith(allowed + ".") for allowed in json.loads(allowed_modules))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model-uri", required=True)
    parser.add_argument("--description", default="")
    parser.add_argument("--launcher-args", default="{}", help="the registration's launcher_args, as JSON")
    parser.add_argument("--allowed-modules", required=True, help='the modules it may import, as a JSON list, or "*" for any')
    options = parser.parse_args()
    launcher_args = dict(json.loads(options.launcher_args))
    module_name = launcher_args.pop("module", None)
    if not module_name:
        sys.exit("launcher_args.module is required for the python launcher: the module whose function loads the model.")
    if not module_allowed(module_name, options.allowed_modules):
        sys.exit(f"launcher_args.module {module_name!r} is not among the modules SERVICE_ALLOWED_PYTHON_MODULES allows "
                 f"({', '.join(json.loads(options.allowed_modules))}); ask the operator to add it.")
    if launcher_args.get("path"):
        sys.path.insert(0, launcher_args.pop("path"))
    function = getattr(importlib.import_module(module_name), launcher_args.pop("function", "launcher"))
    model = function(options.model_uri, options.description, **launcher_args)
    Handler.infer = staticmethod(model.infer if hasattr(model, "infer") else model)
    print(f"serving {module_name} for {options.model_uri} on port {options.port}", flush=True)
    serve(Handler, options.port)


if __name__ == "__main__":
    main()
