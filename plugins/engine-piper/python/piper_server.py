"""Serves one Piper voice (an ONNX VITS model and its .onnx.json, run by the piper-tts package on ONNX Runtime) over
HTTP for the service's Piper engine.

GET /health answers 200 once the voice is loaded. POST /speak {"input",
"voice", "speed"} answers raw 16-bit mono PCM (the sample rate in X-Sample-Rate), one sentence at a time as Piper
synthesizes each, so the first audio leaves before the last sentence is made; a client that goes away stops it at the
next sentence.

Voices: a multi-speaker voice's speakers by the names of its .onnx.json `speaker_id_map`; `default` for its default
speaker (the only one of a single-speaker voice); and OpenAI's voice names (alloy, ash, ...), each the speaker whose
id is its place in that list, counted round the speakers, so OpenAI clients work unchanged. Anything else is a 400
naming `voice` and listing the voices.
"""
import argparse
import json
import threading

import onnxruntime
from piper import PiperVoice, SynthesisConfig
from piper.config import PiperConfig
from service_http import BadRequest, SpeechHandler, serve

OPENAI_VOICES = ["alloy", "ash", "ballad", "cedar", "coral", "echo", "fable", "marin", "nova", "onyx", "sage", "shimmer", "verse"]
# An error lists this many speakers at most (LibriTTS-R's voice has 904).
LISTED_SPEAKERS = 60


def load(model, threads):
    with open(f"{model}.json", encoding="utf-8") as file:
        config = PiperConfig.from_dict(json.load(file))
    options = onnxruntime.SessionOptions()
    if threads:
        options.intra_op_num_threads = threads
    session = onnxruntime.InferenceSession(model, sess_options=options, providers=["CPUExecutionProvider"])
    return PiperVoice(config=config, session=session)


def speaker_ids(config):
    """Every name a voice answers to, with its speaker id (None for a single-speaker voice)."""
    speakers = sorted(config.speaker_id_map.items(), key=lambda item: item[1])
    if config.num_speakers <= 1 or not speakers:
        return {name: None for name in ["default", *OPENAI_VOICES]}
    names = {"default": config.default_speaker_id}
    names.update({name: speakers[index % len(speakers)][1] for index, name in enumerate(OPENAI_VOICES)})
    names.update(dict(speakers))
    return names


def unknown_voice_message(voice, config):
    speakers = [name for name, _ in sorted(config.speaker_id_map.items(), key=lambda item: item[1])] if config.num_speakers > 1 else []
    listed = ", ".join(speakers[:LISTED_SPEAKERS]) + (f", … ({len(speakers)} speakers in all)" if len(speakers) > LISTED_SPEAKERS else "")
    speakers_part = f"its speakers {listed}, " if speakers else ""
    return f"`voice` \"{voice}\" is not a voice of this model; it takes {speakers_part}default, or one of OpenAI's voices ({', '.join(OPENAI_VOICES)})."


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True, help="the voice's .onnx file; its .onnx.json lies beside it")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--threads", type=int, default=0, help="ONNX Runtime's threads (0: its own choice)")
    args = parser.parse_args()
    voice = load(args.model, args.threads)
    voices = speaker_ids(voice.config)
    # One synthesis at a time: ONNX Runtime already spreads one over the cores.
    lock = threading.Lock()

    class Handler(SpeechHandler):
        def speak(self, request):
            name = request.get("voice")
            if name not in voices:
                raise BadRequest(unknown_voice_message(name, voice.config), "voice")
            synthesis = SynthesisConfig(speaker_id=voices[name], length_scale=voice.config.length_scale / float(request.get("speed", 1.0)))

            def pcm():
                with lock:
                    for chunk in voice.synthesize(request["input"], synthesis):
                        yield chunk.audio_int16_bytes

            self.stream_speech(voice.config.sample_rate, pcm())

    serve(Handler, args.port)


if __name__ == "__main__":
    main()
