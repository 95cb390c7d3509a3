"""Tiny randomly initialised image-text-to-text models (LLaVA, Qwen2-VL, Idefics3 /
SmolVLM) with an offline byte-level BPE tokenizer, saved like hub checkpoints so
that ``AutoProcessor`` / ``AutoModelForImageTextToText`` load them from a folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"

LLAVA_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}USER: {% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image>\n{% elif c['type'] == 'text' %}{{ c['text'] }}"
    "{% endif %}{% endfor %} {% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
QWEN_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif c['type'] == 'text' %}{{ c['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
IDEFICS3_TEMPLATE = (
    "<|im_start|>{% for m in messages %}{{ m['role'] | capitalize }}:"
    "{% for c in m['content'] %}{% if c['type'] == 'image' %}<image>"
    "{% elif c['type'] == 'text' %} {{ c['text'] }}{% endif %}{% endfor %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)

SPECIAL = [
    "<pad>", "<s>", "</s>", "<unk>", "<image>", "<|im_start|>", "<|im_end|>",
    "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>",
    "<fake_token_around_image>", "<global-img>", "<end_of_utterance>",
] + [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]


def make_tokenizer() -> Any:
    """A byte-level BPE tokenizer trained on a few MCQ-like lines, so that both
    'A' and ' A' are single tokens (as in real VLM vocabularies)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = []
    for i, letter in enumerate(LETTERS):
        corpus += [f"USER: What is in this image?\n{letter}. tabby cat\n ASSISTANT: {letter}",
                   f"Assistant: {letter}. espresso cup rocket goldfish {i}",
                   "Answer with the option's letter from the given choices directly."] * 3
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, special_tokens=SPECIAL,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")
    return fast


def _text_config(vocab: int) -> dict[str, Any]:
    return {"vocab_size": vocab, "hidden_size": 32, "intermediate_size": 64,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "max_position_embeddings": 512, "tie_word_embeddings": False}


def _save(model: Any, processor: Any, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    processor.save_pretrained(out)
    return out


def _seeded(build: Any) -> Any:
    import torch

    with torch.random.fork_rng():
        torch.manual_seed(0)
        return build()


def make_llava(out: Path, image_size: int = 32, tok: Any = None,
               chat_template: str = LLAVA_TEMPLATE) -> Path:
    """A tiny randomly initialised LLaVA (8x8 patches: ``image_size`` 32 gives 16
    image tokens); ``tok`` a tokenizer prepared by the caller (default
    :func:`make_tokenizer`'s)."""
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tok = make_tokenizer() if tok is None else tok
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=4, image_size=image_size, patch_size=8)
    cfg = LlavaConfig(vision_config=vision, text_config=LlamaConfig(**_text_config(len(tok))),
                      image_token_id=tok.convert_tokens_to_ids("<image>"),
                      vision_feature_select_strategy="default", vision_feature_layer=-1)
    model = _seeded(lambda: LlavaForConditionalGeneration(cfg).eval())
    image_proc = CLIPImageProcessor(size={"shortest_edge": image_size},
                                    crop_size={"height": image_size, "width": image_size})
    proc = LlavaProcessor(image_processor=image_proc, tokenizer=tok, patch_size=8,
                          vision_feature_select_strategy="default", num_additional_image_tokens=1,
                          chat_template=chat_template)
    return _save(model, proc, out)


def make_qwen2vl(out: Path) -> Path:
    from transformers import (
        Qwen2VLConfig,
        Qwen2VLForConditionalGeneration,
        Qwen2VLImageProcessor,
        Qwen2VLProcessor,
        Qwen2VLVideoProcessor,
    )

    tok = make_tokenizer()
    ids = {t: tok.convert_tokens_to_ids(t) for t in
           ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")}
    text = dict(_text_config(len(tok)), rope_scaling={"type": "mrope",
                                                      "mrope_section": [2, 1, 1]})
    vision = {"depth": 1, "embed_dim": 32, "hidden_size": 32, "num_heads": 4, "mlp_ratio": 2,
              "patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2,
              "in_channels": 3}
    text.update(bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    cfg = Qwen2VLConfig(text_config=text, vision_config=vision,
                        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
                        vision_start_token_id=ids["<|vision_start|>"],
                        vision_end_token_id=ids["<|vision_end|>"])
    model = _seeded(lambda: Qwen2VLForConditionalGeneration(cfg).eval())
    pixels = 56 * 56
    image_proc = Qwen2VLImageProcessor(min_pixels=pixels, max_pixels=pixels)
    proc = Qwen2VLProcessor(image_processor=image_proc, tokenizer=tok,
                            video_processor=Qwen2VLVideoProcessor(),
                            chat_template=QWEN_TEMPLATE)
    return _save(model, proc, out)


def make_idefics3(out: Path) -> Path:
    from transformers import (
        Idefics3Config,
        Idefics3ForConditionalGeneration,
        Idefics3ImageProcessor,
        Idefics3Processor,
    )

    tok = make_tokenizer()
    vision = {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
              "num_attention_heads": 4, "image_size": 32, "patch_size": 8}
    cfg = Idefics3Config(vision_config=vision,
                         text_config=dict(_text_config(len(tok)), model_type="llama"),
                         image_token_id=tok.convert_tokens_to_ids("<image>"), scale_factor=2)
    model = _seeded(lambda: Idefics3ForConditionalGeneration(cfg).eval())
    image_proc = Idefics3ImageProcessor(do_image_splitting=False,
                                        size={"longest_edge": 32},
                                        max_image_size={"longest_edge": 32})
    proc = Idefics3Processor(image_processor=image_proc, tokenizer=tok, image_seq_len=4,
                             chat_template=IDEFICS3_TEMPLATE)
    return _save(model, proc, out)


REMOTE_CONFIG_CODE = '''"""A LLaVA variant whose code ships with the checkpoint (trust_remote_code)."""
from transformers import LlavaConfig


class TinyRemoteVlmConfig(LlavaConfig):
    model_type = "tiny_remote_vlm"
'''

REMOTE_MODEL_CODE = '''"""Modelling code of the tiny remote-code VLM: LLaVA with a tell-tale scale on
the final logits, so a test can see this file's code ran."""
from transformers import LlavaForConditionalGeneration

from .configuration_tiny_remote_vlm import TinyRemoteVlmConfig

LOGIT_SCALE = 3.0


class TinyRemoteVlmForConditionalGeneration(LlavaForConditionalGeneration):
    config_class = TinyRemoteVlmConfig

    def forward(self, *args, **kwargs):
        out = super().forward(*args, **kwargs)
        out.logits = out.logits * LOGIT_SCALE
        return out
'''


def make_remote_code_vlm(out: Path, auto_class: str = "AutoModelForImageTextToText") -> Path:
    """A tiny model whose configuration and modelling code live in the model
    folder (``auto_map`` in config.json), like MoonDream2 or Ovis2's originals.
    ``auto_class="AutoModelForCausalLM"`` registers the class as a causal LM only,
    as MoonDream2's ``auto_map`` does."""
    import importlib.util
    import sys

    from transformers import CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaProcessor

    code = out.parent / "tiny_remote_vlm_code"
    code.mkdir(parents=True, exist_ok=True)
    (code / "__init__.py").write_text("")
    (code / "configuration_tiny_remote_vlm.py").write_text(REMOTE_CONFIG_CODE)
    (code / "modeling_tiny_remote_vlm.py").write_text(REMOTE_MODEL_CODE)
    spec = importlib.util.spec_from_file_location("tiny_remote_vlm_code", code / "__init__.py",
                                                  submodule_search_locations=[str(code)])
    assert spec is not None and spec.loader is not None
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["tiny_remote_vlm_code"] = pkg
    spec.loader.exec_module(pkg)
    cfg_mod = importlib.import_module("tiny_remote_vlm_code.configuration_tiny_remote_vlm")
    model_mod = importlib.import_module("tiny_remote_vlm_code.modeling_tiny_remote_vlm")
    cfg_mod.TinyRemoteVlmConfig.register_for_auto_class()
    model_mod.TinyRemoteVlmForConditionalGeneration.register_for_auto_class(auto_class)
    tok = make_tokenizer()
    vision = CLIPVisionConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                              num_attention_heads=4, image_size=32, patch_size=8)
    cfg = cfg_mod.TinyRemoteVlmConfig(
        vision_config=vision, text_config=LlamaConfig(**_text_config(len(tok))),
        image_token_id=tok.convert_tokens_to_ids("<image>"),
        vision_feature_select_strategy="default", vision_feature_layer=-1)
    model = _seeded(lambda: model_mod.TinyRemoteVlmForConditionalGeneration(cfg).eval())
    image_proc = CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32,
                                    "width": 32})
    proc = LlavaProcessor(image_processor=image_proc, tokenizer=tok, patch_size=8,
                          vision_feature_select_strategy="default", num_additional_image_tokens=1,
                          chat_template=LLAVA_TEMPLATE)
    return _save(model, proc, out)
