"""Serves one VITS text-to-speech model (transformers' VitsModel: MMS-TTS, VITS) over HTTP for the service's VITS engine.

GET /health answers 200 once the model is loaded. POST /speak {"input", "voice", "speed"} answers raw 16-bit mono PCM
(the sample rate in X-Sample-Rate), one sentence at a time as each is synthesized, so the first audio leaves before
the last sentence is made; a client that goes away stops it at the next sentence. An unknown voice is a 400 naming
`voice`. A model folder with a config but no weights (the catalogue's tiny-random-vits) is built from the config with
seeded random weights, as transformers builds any model from its config.
"""
import argparse
import json
import os
import re
import threading

import torch
from service_http import BadRequest, SpeechHandler, serve
from transformers import VitsConfig, VitsModel, VitsTokenizer

WEIGHTS = ("model.safetensors", "pytorch_model.bin")
# Sentences end at . ! ? (or a line break) followed by space; each is synthesized on its own.
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")


def load(folder, threads):
    torch.set_num_threads(threads)
    if any(os.path.exists(os.path.join(folder, name)) for name in WEIGHTS):
        model = VitsModel.from_pretrained(folder)
    else:
        torch.manual_seed(42)
        model = VitsModel(VitsConfig.from_pretrained(folder))
    return model.eval(), VitsTokenizer.from_pretrained(folder)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, help="the model's folder")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--voices", default='["default"]', help="JSON list of voice names; a voice's index is its speaker id")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    voices = json.loads(args.voices)
    model, tokenizer = load(args.model, args.threads)
    # One synthesis at a time: the speaking rate is a model attribute, and the CPU is shared anyway.
    lock = threading.Lock()

    class Handler(SpeechHandler):
        def speak(self, request):
            voice = request.get("voice")
            if voice not in voices:
                raise BadRequest(f"`voice` \"{voice}\" is not a voice of this model; it has: {', '.join(voices)}.", "voice")
            sentences = [part.strip() for part in SENTENCE_END.split(request["input"]) if part.strip()]

            def pcm():
                for sentence in sentences:
                    inputs = tokenizer(sentence, return_tensors="pt")
                    if inputs["input_ids"].shape[-1] == 0:
                        continue
                    with lock, torch.no_grad():
                        model.speaking_rate = float(request.get("speed", 1.0))
                        speaker = {"speaker_id": voices.index(voice)} if model.config.num_speakers > 1 else {}
                        waveform = model(**inputs, **speaker).waveform[0]
                    yield (waveform.clamp(-1, 1) * 32767).to(torch.int16).numpy().tobytes()

            self.stream_speech(model.config.sampling_rate, pcm(), len(sentences))

    serve(Handler, args.port)


if __name__ == "__main__":
    main()
