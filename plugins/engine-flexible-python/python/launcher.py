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

from service_http import BadRequest, JsonHandler, serve


def as_json(value):
    """numpy arrays and scalars, and anything else with `tolist` or `item`, as the plain values JSON has."""
    for method in ("tolist", "item"):
        if hasattr(value, method):
            return getattr(value, method)()
    raise TypeError(f"the model answered a {type(value).__name__}, which is not JSON")


class Handler(JsonHandler):
    infer = None

    def post_routes(self):
        return {"/infer": self.call}

    def call(self, request):
        result = self.infer(*request.get("args", []), **request.get("kwargs", {}))
        self.send_json(200, {"result": json.loads(json.dumps(result, default=as_json))})

    def refusal(self, error):
        return BadRequest(f"{type(error).__name__}: {error}") if isinstance(error, (TypeError, ValueError)) else None


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
    serve(Handler, options.port)


if __name__ == "__main__":
    main()
