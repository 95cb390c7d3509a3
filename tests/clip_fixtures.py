"""A tiny randomly initialised open_clip model saved as a local-dir checkpoint
(``clip:local-dir:DIR``; open_clip's bundled BPE vocab, no downloads), the one
the clip adapter, label-space, OOD (MCM) and retrieval tests run."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

TINY_CFG: dict[str, Any] = {
    "embed_dim": 32,
    "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 16, "head_width": 16},
    "text_cfg": {"context_length": 24, "vocab_size": 49408, "width": 32, "heads": 2, "layers": 1},
}


def make_open_clip(folder: Path, *, seed: int = 0, logit_scale: float | None = None,
                   cfg: Mapping[str, Any] = TINY_CFG) -> Path:
    """``folder`` holding ``open_clip_config.json`` and the weights open_clip
    initialises under ``seed`` (the global torch RNG is left as it was);
    ``logit_scale`` sets a temperature other than open_clip's initial 1/0.07,
    so that a test shows the scale is read from the checkpoint."""
    import numpy as np
    import open_clip
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "open_clip_config.json").write_text(json.dumps({"model_cfg": dict(cfg)}))
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = open_clip.create_model(f"local-dir:{folder}")
    if logit_scale is not None:
        with torch.no_grad():
            model.logit_scale.fill_(np.log(logit_scale))
    torch.save(model.state_dict(), folder / "open_clip_pytorch_model.bin")
    return folder
