"""The program that serves one model with Hugging Face Transformers: an OpenAI-compatible HTTP server.

The service starts one copy per launched model, in the engine's virtual environment, on the port it picked, and
waits until GET /health answers 200 (once the weights are loaded). It speaks what the service sends: chat and
completions, always streamed as server-sent events (non-streamed replies are served too, for people calling it by
hand), embeddings and rerank, pictures in chat for a vision-language LLM (its processor's template and pictures, see
chat_pictures.py), and for an image model OCR (transformers' GOT-OCR 2.0: its processor's prompt and
picture, the text sent as JSON lines while it is read). The chat prompt comes from the model's own chat template. A
client that goes away stops its generation at the next token. Requests run one at a time: the model's tensors are shared.
"""
import argparse
import json
import threading
import time
import uuid
from pathlib import Path
from queue import Queue

import torch
import transformers
from chat_pictures import turns_and_pictures
from ocr_request import ocr_arguments, picture
from service_http import BadRequest, JsonHandler, serve
from transformers import (
    AutoModel,
    AutoModelForCausalLM,
    AutoModelForImageTextToText,
    AutoModelForSequenceClassification,
    AutoProcessor,
    AutoTokenizer,
    StoppingCriteria,
    StoppingCriteriaList,
)

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--model", required=True, help="the model's folder, or a file in it")
parser.add_argument("--model-uid", required=True)
parser.add_argument("--model-type", choices=["LLM", "embedding", "rerank", "image"], default="LLM")
parser.add_argument("--dtype", default="auto", help="auto, float32, float16 or bfloat16")
parser.add_argument("--device", default="auto", help="auto (cuda when there is a GPU), cpu or cuda")
parser.add_argument("--trust-remote-code", action="store_true")
parser.add_argument("--max-new-tokens", type=int, default=512, help="when a request gives no max_tokens")
parser.add_argument("--threads", type=int, default=0, help="torch CPU threads; 0 leaves torch's default")
options = parser.parse_args()


def sees(folder):
    """Whether an LLM's folder holds a vision-language model: its config has a vision tower."""
    try:
        return "vision_config" in json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return False


def load():
    folder = Path(options.model)
    if folder.is_file():
        folder = folder.parent
    device = options.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = "auto" if options.dtype == "auto" else getattr(torch, options.dtype)
    if options.threads > 0:
        torch.set_num_threads(options.threads)
    kind = {"LLM": AutoModelForCausalLM, "embedding": AutoModel, "rerank": AutoModelForSequenceClassification, "image": AutoModelForImageTextToText}[options.model_type]
    if options.model_type == "LLM" and sees(folder):
        kind = AutoModelForImageTextToText
    # An image model reads text (OCR), a vision-language LLM sees pictures: the processor makes the prompt from the
    # pictures and holds the tokenizer.
    processor = AutoProcessor.from_pretrained(folder, trust_remote_code=options.trust_remote_code) if kind is AutoModelForImageTextToText else None
    tokenizer = processor.tokenizer if processor else AutoTokenizer.from_pretrained(folder, trust_remote_code=options.trust_remote_code)
    model = kind.from_pretrained(folder, dtype=dtype, trust_remote_code=options.trust_remote_code).to(device)
    model.eval()
    print(f"loaded {folder} ({options.model_type}) on {device} with transformers {transformers.__version__}, torch {torch.__version__}", flush=True)
    return processor, tokenizer, model, device


processor, tokenizer, model, device = load()


def tool_markers():
    """The tool-call markers that are special tokens of this tokenizer (Llama 3's <|python_tag|>, Mistral's
    [TOOL_CALLS]), by id: decoding skips special tokens, and the service reads calls by these markers."""
    special = set(tokenizer.all_special_ids) | {i for i, token in getattr(tokenizer, "added_tokens_decoder", {}).items() if getattr(token, "special", False)}
    ids = {marker: tokenizer.convert_tokens_to_ids(marker) for marker in ("<tool_call>", "</tool_call>", "<|python_tag|>", "[TOOL_CALLS]", "[ARGS]")}
    return {i: marker for marker, i in ids.items() if isinstance(i, int) and i in special and i != tokenizer.unk_token_id}


TOOL_MARKERS = tool_markers()
# Tokens at the end of a chat prompt that the first chunk of its stream repeats: enough for any template's opening of
# a reasoning block.
PROMPT_TAIL_TOKENS = 32
lock = threading.Lock()


class Cancelled(StoppingCriteria):
    """Stops generate() once the request is over: its client went away, or a stop string was written."""

    def __init__(self):
        self.event = threading.Event()

    def __call__(self, input_ids, scores, **kwargs):
        return self.event.is_set()


class TokenQueue:
    """A streamer for generate(): the new token ids of each step, then None."""

    def __init__(self, prompt_length):
        self.queue = Queue()
        self.skip = prompt_length

    def put(self, value):
        ids = value.reshape(-1).tolist()
        if self.skip:
            # generate() puts the prompt first.
            self.skip = 0
            return
        self.queue.put(ids)

    def end(self):
        self.queue.put(None)


def sampling(request, prompt_length):
    max_tokens = request.get("max_tokens") or request.get("max_completion_tokens") or options.max_new_tokens
    if not isinstance(max_tokens, int) or max_tokens < 1:
        raise BadRequest("max_tokens must be a whole number above 0.", "max_tokens")
    temperature = request.get("temperature", 1.0)
    settings = {"max_new_tokens": max_tokens, "pad_token_id": tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id}
    if temperature is not None and temperature <= 0:
        settings["do_sample"] = False
    else:
        settings.update(do_sample=True, temperature=temperature if temperature is not None else 1.0, top_p=request.get("top_p") or 1.0, top_k=request.get("top_k") or 0)
        if request.get("min_p"):
            settings["min_p"] = request["min_p"]
    if request.get("ignore_eos"):
        settings["eos_token_id"] = None
    return settings


def renders_tools(request):
    """Whether the request's tools go into the prompt: not when it asks for no calls (tool_choice "none")."""
    return bool(request.get("tools")) and request.get("tool_choice") != "none"


def decode(ids, keep_markers):
    """The text of generated ids, special tokens left out but for the tool-call markers when tools were given."""
    if not keep_markers or not TOOL_MARKERS or not any(i in TOOL_MARKERS for i in ids):
        return tokenizer.decode(ids, skip_special_tokens=True)
    parts, run = [], []
    for i in ids:
        if i in TOOL_MARKERS:
            parts += [tokenizer.decode(run, skip_special_tokens=True), TOOL_MARKERS[i]]
            run = []
        else:
            run.append(i)
    return "".join(parts + [tokenizer.decode(run, skip_special_tokens=True)])


def generate(request, prompt_ids, extra=None):
    """Yields text pieces as they are decoded, then ("done", finish_reason, completion_tokens); `extra`: further
    arguments of generate() (a picture's pixel_values, settings the request's own fields do not carry)."""
    settings = {**sampling(request, len(prompt_ids)), **(extra or {})}
    stop = request.get("stop") or []
    stop = [stop] if isinstance(stop, str) else stop
    if request.get("seed") is not None:
        torch.manual_seed(int(request["seed"]))
    cancelled = Cancelled()
    streamer = TokenQueue(len(prompt_ids))
    inputs = torch.tensor([prompt_ids], device=device)
    failure = []

    def run():
        try:
            with torch.inference_mode():
                model.generate(inputs, attention_mask=torch.ones_like(inputs), streamer=streamer, stopping_criteria=StoppingCriteriaList([cancelled]), **settings)
        except Exception as error:  # reported to the request, not lost in a thread
            failure.append(error)
            streamer.end()

    worker = threading.Thread(target=run, daemon=True)
    generated, text, finish = [], "", None
    keep_markers = renders_tools(request)
    try:
        worker.start()
        for ids in iter(streamer.queue.get, None):
            generated.extend(ids)
            decoded = decode(generated, keep_markers)
            # A character split across tokens decodes as U+FFFD until its last byte arrives.
            if decoded.endswith("\ufffd") or len(decoded) <= len(text):
                continue
            piece, text = decoded[len(text):], decoded
            hit = min((text.find(s) for s in stop if s and s in text), default=-1)
            if hit >= 0:
                finish = "stop"
                piece = piece[: max(0, len(piece) - (len(text) - hit))]
                if piece:
                    yield piece
                break
            yield piece
        if finish is None:
            # What the last tokens left undecoded (bytes of no character) still belongs to the reply.
            rest = decode(generated, keep_markers)[len(text):]
            if rest:
                yield rest
    finally:
        cancelled.event.set()
        worker.join()
    if failure:
        raise failure[0]
    if finish is None:
        finish = "length" if len(generated) >= settings["max_new_tokens"] else "stop"
    yield ("done", finish, len(generated))


def chat_prompt(request):
    messages = request.get("messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("messages must be a non-empty list.", "messages")
    if not tokenizer.chat_template and not getattr(processor, "chat_template", None):
        raise BadRequest("this model has no chat template; use /v1/completions.", "messages")
    turns, pictures = turns_and_pictures(messages)
    if pictures and (processor is None or options.model_type != "LLM"):
        raise BadRequest("this model does not see images; send text only.", "messages")
    arguments = request.get("chat_template_kwargs") or {}
    if not isinstance(arguments, dict):
        raise BadRequest("chat_template_kwargs must be an object.", "chat_template_kwargs")
    # Of the template's arguments, the thinking switch of hybrid models (Qwen3's template reads enable_thinking).
    switch = {key: value for key, value in arguments.items() if key in ("enable_thinking", "thinking") and isinstance(value, bool)}
    # A prefill (vLLM's continue_final_message) continues the final assistant turn instead of opening a new one.
    continues = request.get("continue_final_message") is True
    tools = request.get("tools") if renders_tools(request) else None
    if processor is None or options.model_type != "LLM":
        return tokenizer.apply_chat_template(turns, tools=tools, add_generation_prompt=not continues, continue_final_message=continues, tokenize=True, return_dict=False, **switch), {}
    # The processor puts each picture's image tokens where the template placed it, and makes the pixel values; the
    # rendered template already holds its special tokens, as transformers' own tokenizing of a template assumes.
    text = processor.apply_chat_template(turns, tools=tools, add_generation_prompt=not continues, continue_final_message=continues, tokenize=False, **switch)
    inputs = processor(text=text, images=pictures or None, return_tensors="pt", add_special_tokens=False)
    extra = {key: value.to(device) for key, value in inputs.items() if key not in ("input_ids", "attention_mask")}
    if "pixel_values" in extra:
        extra["pixel_values"] = extra["pixel_values"].to(model.dtype)
    return inputs["input_ids"][0].tolist(), extra


def completion_prompt(request):
    prompt = request.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if not isinstance(prompt, str):
        raise BadRequest("prompt must be a string.", "prompt")
    return tokenizer(prompt)["input_ids"]


def embed(texts):
    batch = tokenizer(texts, padding=True, truncation=True, return_tensors="pt").to(device)
    with torch.inference_mode():
        hidden = model(**batch).last_hidden_state
    mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1)
    vectors = torch.nn.functional.normalize(pooled.float(), dim=-1)
    return vectors.tolist(), batch["attention_mask"].sum(1).tolist()


def rank(query, documents):
    batch = tokenizer([query] * len(documents), documents, padding=True, truncation=True, return_tensors="pt").to(device)
    with torch.inference_mode():
        logits = model(**batch).logits.float()
    scores = torch.sigmoid(logits[:, 0] if logits.shape[-1] == 1 else logits[:, -1])
    return scores.tolist(), batch["attention_mask"].sum(1).tolist()


def stop_ids():
    """The tokens OCR ends at: the model's own end, and the end of the assistant's turn (<|im_end|>), where GOT-OCR's
    answer ends though its generation config does not say so."""
    ends = model.generation_config.eos_token_id
    ids = set(ends if isinstance(ends, list) else [ends])
    end_of_turn = getattr(processor, "message_end_token", None)
    if end_of_turn:
        ids.add(tokenizer.convert_tokens_to_ids(end_of_turn))
    return sorted(i for i in ids if i is not None and i != tokenizer.unk_token_id)


def ocr(request):
    """The text pieces the model reads in the request's picture (see generate), greedy as GOT-OCR reads; the picture
    and kwargs are checked before anything runs."""
    if options.model_type != "image":
        raise BadRequest("this model does not read images.", "model")
    image = picture(request.get("image") or {})
    settings, extra = ocr_arguments(request.get("kwargs") or {}, *image.size)
    inputs = processor(image, return_tensors="pt", **settings).to(device)
    print(f"reading a {image.size[0]}x{image.size[1]} picture ({inputs['pixel_values'].shape[0]} patches)", flush=True)
    prompt_ids = inputs["input_ids"][0].tolist()
    extra.update(pixel_values=inputs["pixel_values"].to(model.dtype), eos_token_id=stop_ids())
    return generate({"temperature": 0}, prompt_ids, extra)


def texts_of(value, param):
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or not all(isinstance(item, str) for item in values):
        raise BadRequest(f"{param} must be a string or a non-empty list of strings.", param)
    return values


class Handler(JsonHandler):
    protocol_version = "HTTP/1.1"

    def get_routes(self):
        return {"/v1/models": self.models}

    def post_routes(self):
        return {"/v1/chat/completions": self.chat, "/v1/completions": self.complete, "/v1/embeddings": self.embeddings, "/v1/rerank": self.rerank, "/v1/images/ocr": self.read_text}

    def do_POST(self):
        with lock:
            super().do_POST()

    def models(self):
        self.send_json(200, {"data": [{"id": options.model_uid, "object": "model", "owned_by": "transformers"}], "object": "list"})

    def chat(self, request):
        self.generation(request, *chat_prompt(request), "chat.completion")

    def complete(self, request):
        self.generation(request, completion_prompt(request), {}, "text_completion")

    def generation(self, request, prompt_ids, extra, kind):
        identity = {"created": int(time.time()), "id": f"{'chatcmpl' if kind == 'chat.completion' else 'cmpl'}-{uuid.uuid4().hex}", "model": request.get("model") or options.model_uid}
        chat = kind == "chat.completion"
        pieces = generate(request, prompt_ids, extra)
        if not request.get("stream"):
            text, done = "", None
            for piece in pieces:
                if isinstance(piece, tuple):
                    done = piece
                else:
                    text += piece
            choice = {"finish_reason": done[1], "index": 0, **({"message": {"content": text, "role": "assistant"}} if chat else {"text": text})}
            usage = {"completion_tokens": done[2], "prompt_tokens": len(prompt_ids), "total_tokens": done[2] + len(prompt_ids)}
            return self.send_json(200, {**identity, "choices": [choice], "object": kind, "usage": usage})

        self.start_events()
        object_name = "chat.completion.chunk" if chat else "text_completion"

        def send(choices, usage=None, prompt=None):
            self.send_event({**identity, "choices": choices, "object": object_name, **({"usage": usage} if usage else {}), **({"prompt": prompt} if prompt else {})})

        sent = 0
        try:
            if chat:
                # The end of the rendered prompt tells the service whether the template opened a reasoning block,
                # which the reply then starts inside (DeepSeek-R1's `<think>\n`); see src/kernel/reasoning.ts.
                tail = tokenizer.decode(prompt_ids[-PROMPT_TAIL_TOKENS:])
                send([{"delta": {"content": "", "role": "assistant"}, "finish_reason": None, "index": 0}], prompt={"tail": tail, "tokens": len(prompt_ids)})
            for piece in pieces:
                if isinstance(piece, tuple):
                    _, finish, completion_tokens = piece
                    send([{"finish_reason": finish, "index": 0, **({"delta": {}} if chat else {"text": ""})}])
                    usage = {"completion_tokens": completion_tokens, "prompt_tokens": len(prompt_ids), "total_tokens": completion_tokens + len(prompt_ids)}
                    if (request.get("stream_options") or {}).get("include_usage"):
                        send([], usage)
                    self.send_event("[DONE]")
                    self.end_events()
                    return
                send([{"finish_reason": None, "index": 0, **({"delta": {"content": piece}} if chat else {"text": piece})}])
                sent += 1
        except (BrokenPipeError, ConnectionResetError):
            pieces.close()
            print(f"client disconnected after {sent} pieces; generation stopped", flush=True)

    def read_text(self, request):
        """The text as JSON lines, each piece as it is decoded, so a client that leaves stops the reading."""
        pieces, sent = ocr(request), 0
        try:
            for piece in pieces:
                if not isinstance(piece, tuple):
                    self.line({"type": "text", "text": piece})
                    sent += 1
            if sent == 0:
                self.line({"type": "text", "text": ""})
        except (BrokenPipeError, ConnectionResetError):
            pieces.close()
            print(f"client disconnected after {sent} pieces; reading stopped", flush=True)

    def embeddings(self, request):
        if options.model_type != "embedding":
            raise BadRequest("this model does not make embeddings.", "model")
        vectors, tokens = embed(texts_of(request.get("input"), "input"))
        data = [{"embedding": vector, "index": index, "object": "embedding", "tokens": count} for index, (vector, count) in enumerate(zip(vectors, tokens))]
        self.send_json(200, {"data": data, "model": options.model_uid, "object": "list", "usage": {"prompt_tokens": sum(tokens), "total_tokens": sum(tokens)}})

    def rerank(self, request):
        if options.model_type != "rerank":
            raise BadRequest("this model does not rerank.", "model")
        query = request.get("query")
        if not isinstance(query, str):
            raise BadRequest("query must be a string.", "query")
        scores, tokens = rank(query, texts_of(request.get("documents"), "documents"))
        results = [{"index": index, "relevance_score": score, "tokens": count} for index, (score, count) in enumerate(zip(scores, tokens))]
        self.send_json(200, {"model": options.model_uid, "results": results, "usage": {"prompt_tokens": sum(tokens), "total_tokens": sum(tokens)}})


print(f"serving {options.model_uid} on port {options.port}", flush=True)
serve(Handler, options.port)
