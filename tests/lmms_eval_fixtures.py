"""A tiny LLaVA for lmms-eval's ``llava_hf`` model class, and the cached
lmms-eval environment (scripts/lmms-eval-env.sh) the end-to-end test runs.

lmms-eval's ``llava_hf.loglikelihood`` renders ``<image>\\n{context}`` as a
*string* user turn through the tokenizer's chat template, with the option as
the assistant turn; our ``hf`` backend renders a structured turn
(``[{"type": "image"}, {"type": "text"}]``) through the processor's template.
``STRING_TEMPLATE`` renders both kinds of turn to the same text and writes the
assistant turn as ``ASSISTANT:{content}`` with nothing after it (no end of
sequence), so both tools score the same tokens.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent

STRING_TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'user' %}USER: "
    "{% if m['content'] is string %}{{ m['content'] }}{% else %}{% for c in m['content'] %}"
    "{% if c['type'] == 'image' %}<image>\n{% elif c['type'] == 'text' %}{{ c['text'] }}"
    "{% endif %}{% endfor %}{% endif %} "
    "{% else %}ASSISTANT:{% if m['content'] is string %}{{ m['content'] }}{% else %}"
    "{% for c in m['content'] %}{% if c['type'] == 'text' %}{{ c['text'] }}{% endif %}"
    "{% endfor %}{% endif %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def make_llava_for_lmms(out: Path, image_size: int = 8) -> Path:
    """A tiny randomly initialised LLaVA saved as a hub checkpoint, its tokenizer
    and processor sharing ``STRING_TEMPLATE``. ``image_size`` 8 (one 8x8 patch)
    gives one image token (see the test module for why that matters)."""
    from tests.vlm_fixtures import make_llava, make_tokenizer

    tok = make_tokenizer()
    tok.chat_template = STRING_TEMPLATE
    # as LLaVA's Llama tokenizer: no token_type_ids, which generate() refuses for LLaVA
    # (lmms-eval's llava_hf then logs an empty text for every row)
    tok.model_input_names = ["input_ids", "attention_mask"]
    tok.init_kwargs["model_input_names"] = tok.model_input_names  # saved with it
    return make_llava(out, image_size, tok=tok, chat_template=STRING_TEMPLATE)


def lmms_eval_env(build: bool) -> Path | None:
    """The cached lmms-eval environment's folder; None when it is not built and
    ``build`` is false. Building runs scripts/lmms-eval-env.sh (which waits on a
    build already running)."""
    script = REPO / "scripts" / "lmms-eval-env.sh"
    key = subprocess.run(["bash", str(script), "--key"], check=True, capture_output=True,
                         text=True).stdout.strip()
    if (Path(key) / ".ready").is_file():
        return Path(key)
    if not build:
        return None
    done = subprocess.run(["bash", str(script)], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"building the lmms-eval environment failed:\n{done.stderr[-3000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def offline_env(**extra: str) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false",
               WANDB_MODE="disabled", **extra)
    return env
