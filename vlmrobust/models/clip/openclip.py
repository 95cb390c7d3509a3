"""open_clip zero-shot: one text embedding per option from a prompt template;
option logits = ``logit_scale * cos(image, text)``. Over a label space (kind
classification / ood) the same per class, the class embeddings computed once
per space: argmax over the space is seed 002's CLIP protocol.

Names: ``clip:<arch>:<pretrained tag or checkpoint file>`` (``clip:ViT-B-32:openai``),
``clip:local-dir:<folder with open_clip_config.json + weights>``,
``clip:hf-hub:<org/repo>`` (open_clip weights on the hub),
``clip:hf:<hub id or folder>`` (a transformers CLIPModel: models/hf_clip.py);
``clip:<arch>:none`` builds a randomly initialised model (for tests and
debugging only).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.label_space import LabelSpace
from vlmrobust.models.base import (
    ADAPTER_FAMILIES,
    AdapterFamily,
    AdapterSpec,
    pad_rows,
    row_options,
)
from vlmrobust.models.clip.groups import clip_groups
from vlmrobust.models.label_logits import per_row
from vlmrobust.models.prompts import resolve_prompt
from vlmrobust.models.runtime import preferred_dtype, resolve_device, to_pil

SCHEMAS = ("local-dir:", "hf-hub:", "hf:")
TEXT_CHUNK = 1024  # prompts per text forward
RANDOM_INIT = "none"


def split_target(target: str) -> tuple[str, str | None]:
    """(open_clip model name, pretrained) from the part after ``clip:``.

    >>> split_target("ViT-B-32:openai")
    ('ViT-B-32', 'openai')
    >>> split_target("local-dir:/m/tiny")
    ('local-dir:/m/tiny', None)
    """
    if target.startswith(SCHEMAS):
        return target, None
    if Path(target).is_dir():
        return f"local-dir:{target}", None
    arch, _, pretrained = target.partition(":")
    return arch, pretrained or None


def _parse(name: str, target: str) -> AdapterSpec:
    arch, pretrained = split_target(target)
    if arch.startswith("hf:"):
        from vlmrobust.models.clip.transformers_clip import check_target

        check_target(name, arch[len("hf:"):])
    elif arch.startswith("local-dir:"):
        folder = Path(arch[len("local-dir:"):])
        if not (folder / "open_clip_config.json").is_file():
            raise VlmrobustError(f"{name}: {folder}/open_clip_config.json not found")
    elif not arch.startswith("hf-hub:"):
        import open_clip

        known = open_clip.list_models()
        if arch not in known:
            import difflib

            close = difflib.get_close_matches(arch, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise VlmrobustError(f"unknown open_clip architecture {arch!r}{hint}")
        tags = open_clip.list_pretrained_tags_by_model(arch)
        if pretrained is None:
            raise VlmrobustError(
                f"{name}: give weights as clip:{arch}:TAG or clip:{arch}:/path/to/checkpoint "
                f"(tags: {', '.join(tags) or 'none'})"
            )
        if pretrained != RANDOM_INIT and pretrained not in tags and not Path(pretrained).is_file():
            raise VlmrobustError(
                f"{name}: {pretrained!r} is neither a pretrained tag of {arch} "
                f"({', '.join(tags) or 'none'}) nor a checkpoint file"
            )
    return AdapterSpec(name=name, family="clip", target=target)


class ClipAdapter:
    family = "clip"

    def __init__(self, name: str, model: Any, preprocess: Any, tokenizer: Any, device: Any,
                 prompt: str | None = None, vision_encoder: str | None = None) -> None:
        import torch

        self._torch = torch
        self.name = name
        self.model = model.eval()
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        self.device = device
        self.prompt_id, self.templates = resolve_prompt(prompt)
        self.vision_encoder = vision_encoder
        self.params = int(sum(p.numel() for p in model.parameters()))
        self._dtype = preferred_dtype(device)
        self._text_cache: dict[str, Any] = {}
        self.model_groups: dict[str, Any] = {}
        self._space_cache: dict[str, Any] = {}

    def _autocast(self) -> Any:
        torch = self._torch
        return torch.autocast(self.device.type, dtype=self._dtype,
                              enabled=self._dtype != torch.float32)

    def _image_features(self, images: Sequence[Any]) -> Any:
        torch = self._torch
        x = torch.stack([self.preprocess(to_pil(im)) for im in images]).to(self.device)
        with torch.inference_mode(), self._autocast():
            feats = self.model.encode_image(x).float()
        return torch.nn.functional.normalize(feats, dim=-1)

    def embed_images(self, images: Sequence[Any]) -> np.ndarray:
        """L2-normalised image embeddings, float32 (B, D), in the text embedding space."""
        return np.asarray(self._image_features(images).cpu().numpy(), dtype=np.float32)

    def _text_features(self, texts: Sequence[str]) -> Any:
        """One L2-normalised embedding per option text (the mean over the prompt's
        templates, renormalised); cached per unique text. New texts are encoded
        in chunks of at most TEXT_CHUNK prompts (1,000 classes x 80 templates
        would not fit one forward)."""
        torch = self._torch
        new = list(dict.fromkeys(t for t in texts if t not in self._text_cache))
        step = max(1, TEXT_CHUNK // len(self.templates))
        for s in range(0, len(new), step):
            part = new[s:s + step]
            prompts = [tpl.format(option=t) for t in part for tpl in self.templates]
            tokens = self.tokenizer(prompts).to(self.device)
            with torch.inference_mode(), self._autocast():
                feats = self.model.encode_text(tokens).float()
            feats = torch.nn.functional.normalize(feats, dim=-1)
            feats = feats.view(len(part), len(self.templates), -1).mean(dim=1)
            feats = torch.nn.functional.normalize(feats, dim=-1)
            for t, f in zip(part, feats, strict=True):
                self._text_cache[t] = f
        return torch.stack([self._text_cache[t] for t in texts])

    def class_embeddings(self, space: LabelSpace) -> Any:
        """(n_classes, D) L2-normalised class text embeddings of ``space``
        under the prompt, computed once per label space, from its label texts
        (:attr:`LabelSpace.texts`: OpenAI CLIP's ImageNet names in a build
        with ``class_names: openai``, seed 001's "default prompt template
        provided by [1]" filled with [1]'s class names)."""
        key = space.sha256()
        if key not in self._space_cache:
            self._space_cache[key] = self._text_features(space.texts)
        return self._space_cache[key]

    def logit_scale_value(self) -> float:
        """The multiplier s of ``logits = s·cos`` (exp of the model's parameter)."""
        return float(self.model.logit_scale.exp().float().item())

    def label_logits(self, rows: Sequence[Mapping[str, Any]], space: LabelSpace
                     ) -> list[np.ndarray]:
        """Per row, ``s·cos(image, class text)`` for every class of ``space`` (or
        the row's candidates); argmax over them is seed 002's zero-shot label."""
        torch = self._torch
        text = self.class_embeddings(space)
        img = self._image_features([row["image"] for row in rows])
        scale = self.model.logit_scale.exp().float()
        with torch.inference_mode():
            logits = (scale * img @ text.T).cpu().numpy()
        return per_row(logits, rows, len(space))

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised text embeddings of ``texts`` under the prompt, float32 (N, D)."""
        return np.asarray(self._text_features(texts).cpu().numpy(), dtype=np.float32)

    def embed_captions(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised embeddings of ``texts`` as they are (no prompt template:
        retrieval captions, as CLIP_benchmark embeds them), float32 (N, D); the
        tokenizer truncates to the model's context length."""
        torch = self._torch
        tokens = self.tokenizer(list(texts)).to(self.device)
        with torch.inference_mode(), self._autocast():
            feats = self.model.encode_text(tokens).float()
        return np.asarray(torch.nn.functional.normalize(feats, dim=-1).cpu().numpy(),
                          dtype=np.float32)

    def option_logits(self, rows: Sequence[Mapping[str, Any]]) -> np.ndarray:
        torch = self._torch
        options = [row_options(row, f"row {row.get('id', i)!r}") for i, row in enumerate(rows)]
        img = self._image_features([row["image"] for row in rows])
        text = self._text_features([o for opts in options for o in opts])
        scale = self.model.logit_scale.exp().float()
        per_row = []
        start = 0
        with torch.inference_mode():
            for i, opts in enumerate(options):
                t = text[start:start + len(opts)]
                start += len(opts)
                per_row.append((scale * (t @ img[i])).cpu().numpy())
        return pad_rows(per_row)


def _load(spec: AdapterSpec, device: str | None, prompt: str | None = None,
          **opts: Any) -> ClipAdapter:
    if opts:
        raise VlmrobustError(f"{spec.name}: unexpected options {sorted(opts)}")
    resolve_prompt(prompt)  # bad prompt: fail before loading weights
    import open_clip

    dev = resolve_device(device)
    arch, pretrained = split_target(spec.target)
    if arch.startswith("hf:"):
        from vlmrobust.models.clip.transformers_clip import load_hf_clip

        model, preprocess, tokenizer = load_hf_clip(arch[len("hf:"):], dev)
        vision = getattr(model.inner.config, "vision_config", None)
        return ClipAdapter(spec.name, model, preprocess, tokenizer, dev, prompt=prompt,
                           vision_encoder=getattr(vision, "model_type", None))
    if pretrained == RANDOM_INIT:
        pretrained = None
    _require_weights(spec.name, arch, pretrained)
    try:
        model, _, preprocess = open_clip.create_model_and_transforms(
            arch, pretrained=pretrained, device=dev
        )
        tokenizer = open_clip.get_tokenizer(arch)
    except (RuntimeError, OSError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise VlmrobustError(
            f"{spec.name}: could not load the open_clip model ({first}); "
            "download the weights first or pass a local checkpoint path"
        ) from None
    adapter = ClipAdapter(spec.name, model, preprocess, tokenizer, dev, prompt=prompt,
                          vision_encoder=arch)
    # model groups the architecture and pretrained tag state (recorded by predict)
    adapter.model_groups = clip_groups(arch, pretrained)
    return adapter


def _require_weights(name: str, arch: str, pretrained: str | None) -> None:
    """Offline with the weights' hub repository not cached: one line now, not
    open_clip's retries (issue 40 item 5)."""
    from vlmrobust.models.hub_access import require_hub_repo

    if arch.startswith("hf-hub:"):
        repo = "/".join(arch[len("hf-hub:"):].split("/")[:2])
    elif pretrained is not None and not Path(pretrained).is_file():
        import open_clip

        # 'org/name/' or 'org/name/file': open_clip's pretrained table
        repo = "/".join(str(open_clip.get_pretrained_cfg(arch, pretrained).get("hf_hub", ""))
                        .split("/")[:2])
    else:
        return
    if repo.count("/") == 1:
        require_hub_repo(name, repo)


ADAPTER_FAMILIES.add("clip", AdapterFamily("clip", _parse, _load,
                                           help="open_clip or transformers CLIP zero-shot"))
