"""Makes the random-weight models of the engine's generated catalogue specs (tiny-random-llm, tiny-random-embedding and
tiny-random-rerank as safetensors), with
transformers itself building them from a config: no download, a fixed seed, so the same recipe always gives the same
files. The tokenizers are byte-level BPE with no merges (one token per byte, built here, nothing trained), so any
text round-trips: the chat model's with a ChatML chat template, the BERT models' with [CLS] and [SEP] around each
text or pair. Replies are gibberish, vectors and scores mean nothing.

Usage: make_tiny_model.py RECIPE NAME=PATH...   (each file of the spec, by name, and where to write it)
"""
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import BertConfig, BertForSequenceClassification, BertModel, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

SEED = 42
CHATML = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def byte_level():
    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tokenizer = Tokenizer(models.BPE(vocab={symbol: index for index, symbol in enumerate(alphabet)}, merges=[]))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def byte_level_tokenizer():
    fast = PreTrainedTokenizerFast(tokenizer_object=byte_level(), eos_token="<|im_end|>", pad_token="<|endoftext|>", additional_special_tokens=["<|im_start|>"])
    fast.chat_template = CHATML
    return fast


def bert_tokenizer():
    tokenizer = byte_level()
    tokenizer.add_special_tokens(["[PAD]", "[CLS]", "[SEP]"])
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]", model_max_length=128)


def tiny_random_bert(kind):
    def make(folder):
        tokenizer = bert_tokenizer()
        config = BertConfig(
            vocab_size=len(tokenizer),
            hidden_size=64,
            intermediate_size=128,
            num_hidden_layers=2,
            num_attention_heads=2,
            max_position_embeddings=128,
            pad_token_id=tokenizer.pad_token_id,
            num_labels=1,
        )
        torch.manual_seed(SEED)
        kind(config).save_pretrained(folder, safe_serialization=True)
        tokenizer.save_pretrained(folder)

    return make


def tiny_random_llama(folder):
    tokenizer = byte_level_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=None,
        eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"),
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config)
    model.save_pretrained(folder, safe_serialization=True)
    tokenizer.save_pretrained(folder)
    # Older transformers keep the template only inside tokenizer_config.json; newer ones also read this file.
    (folder / "chat_template.jinja").write_text(CHATML)


RECIPES = {
    "tiny-random-bert-embedding": tiny_random_bert(BertModel),
    "tiny-random-bert-reranker": tiny_random_bert(BertForSequenceClassification),
    "tiny-random-llama": tiny_random_llama,
}


def main():
    recipe, targets = sys.argv[1], dict(argument.split("=", 1) for argument in sys.argv[2:])
    if recipe not in RECIPES:
        sys.exit(f"unknown recipe {recipe}; known: {', '.join(RECIPES)}")
    with tempfile.TemporaryDirectory() as made:
        RECIPES[recipe](Path(made))
        for name, target in targets.items():
            source = Path(made) / name
            if not source.is_file():
                sys.exit(f"the recipe {recipe} made no {name}; it made {', '.join(sorted(p.name for p in Path(made).iterdir()))}")
            shutil.copyfile(source, target)
    print(f"made {recipe}: {', '.join(targets)}", flush=True)


main()
