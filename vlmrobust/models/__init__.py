"""Model adapters: ``load_adapter(name, device=None)`` -> an :class:`Adapter`.

Names: ``classifier:efficientnet-lite0`` (lite1, lite2, ``classifier:timm:<arch>``),
``clip:<arch>:<pretrained tag or checkpoint path>``, ``vlm:<hub id or local dir>``,
``pipeline:<classifier>+minilm`` (recognise, then answer with the class name).
"""

from vlmrobust.models.base import ADAPTER_FAMILIES, Adapter, AdapterSpec, pad_rows
from vlmrobust.models.encoders.embeddings import class_prototypes, embed_images
from vlmrobust.models.registration import load_adapter, parse_adapter_name

__all__ = [
    "ADAPTER_FAMILIES",
    "Adapter",
    "AdapterSpec",
    "class_prototypes",
    "embed_images",
    "load_adapter",
    "pad_rows",
    "parse_adapter_name",
]
