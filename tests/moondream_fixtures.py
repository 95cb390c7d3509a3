"""A tiny stand-in of MoonDream2's code path: a checkpoint folder whose
``auto_map`` registers a configuration and a causal-LM class only (MoonDream2's
``HfConfig`` / ``HfMoondream``), with no processor, answering through
``query(image, question) -> {"answer": str}``. Its answer comes from a small
linear layer over the image's mean colour, so it moves with the image as a
real model's would, and the weights are saved and loaded like any checkpoint."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

CONFIG_CODE = '''"""Configuration of the tiny MoonDream2 stand-in."""
from transformers import PretrainedConfig


class TinyMoondreamConfig(PretrainedConfig):
    model_type = "tiny_moondream"

    def __init__(self, n_letters=4, answer_style="letter", **kwargs):
        super().__init__(**kwargs)
        self.n_letters = n_letters
        self.answer_style = answer_style
'''

MODEL_CODE = '''"""Modelling code of the tiny MoonDream2 stand-in: query() as MoonDream2's."""
import numpy as np
import torch
from transformers import PreTrainedModel

from .configuration_tiny_moondream import TinyMoondreamConfig


class TinyMoondream(PreTrainedModel):
    config_class = TinyMoondreamConfig

    def __init__(self, config):
        super().__init__(config)
        self.head = torch.nn.Linear(3, config.n_letters)
        self.post_init()

    def _init_weights(self, module):
        pass

    def query(self, image, question):
        options = [line[3:] for line in question.splitlines()
                   if len(line) > 3 and line[1:3] == ". " and line[0].isupper()]
        rgb = torch.tensor(np.asarray(image.convert("RGB"), dtype=np.float32).mean(axis=(0, 1)))
        with torch.no_grad():
            scores = self.head(rgb / 255.0)[: len(options)]
        k = int(scores.argmax())
        if self.config.answer_style == "letter":
            return {"answer": f"The answer is {chr(65 + k)}."}
        if self.config.answer_style == "text":
            return {"answer": f"It looks like {options[k]}."}
        return {"answer": "I cannot tell."}
'''


def make_moondream_like(out: Path, answer_style: str = "letter", seed: int = 0) -> Path:
    """Save the stand-in under ``out`` (its code copied in, ``auto_map`` set)."""
    import torch

    code = out.parent / f"tiny_moondream_code_{out.name}"
    code.mkdir(parents=True, exist_ok=True)
    (code / "__init__.py").write_text("")
    (code / "configuration_tiny_moondream.py").write_text(CONFIG_CODE)
    (code / "modeling_tiny_moondream.py").write_text(MODEL_CODE)
    pkg_name = code.name
    spec = importlib.util.spec_from_file_location(pkg_name, code / "__init__.py",
                                                  submodule_search_locations=[str(code)])
    assert spec is not None and spec.loader is not None
    pkg = importlib.util.module_from_spec(spec)
    sys.modules[pkg_name] = pkg
    spec.loader.exec_module(pkg)
    cfg_mod = importlib.import_module(f"{pkg_name}.configuration_tiny_moondream")
    model_mod = importlib.import_module(f"{pkg_name}.modeling_tiny_moondream")
    cfg_mod.TinyMoondreamConfig.register_for_auto_class()
    model_mod.TinyMoondream.register_for_auto_class("AutoModelForCausalLM")
    torch.manual_seed(seed)
    model = model_mod.TinyMoondream(cfg_mod.TinyMoondreamConfig(answer_style=answer_style))
    with torch.no_grad():  # answers that depend on the colour: red, green, blue, dark
        model.head.weight.copy_(torch.tensor([[4.0, -2, -2], [-2, 4, -2], [-2, -2, 4],
                                              [-3, -3, -3]]))
        model.head.bias.copy_(torch.tensor([0.0, 0.0, 0.0, 2.0]))
    model.save_pretrained(out)
    return out
