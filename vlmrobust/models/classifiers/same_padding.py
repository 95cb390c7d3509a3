"""TensorFlow "same" padding folded into the convolutions of a model whose
input size is fixed (issue 39.2).

``efficientnet_lite_pytorch`` builds every convolution as a
``Conv2dStaticSamePadding``: a ``ZeroPad2d`` (or an identity) that copies the
whole activation, then ``F.conv2d`` with no padding. TF's "same" padding of a
``k``-tap, stride-``s`` convolution on ``n`` pixels is
``p = max((ceil(n/s) - 1) * s + k - n, 0)``, ``p // 2`` before and the rest
after; when it is even on both axes (every stride-1 convolution: ``p = k - 1``)
it is the convolution's own symmetric zero padding ``p // 2``, which oneDNN
applies without a copy. The odd ones (the stem and the stride-2 depthwise
convolutions of EfficientNet-Lite: ``(0, 1)`` or ``(1, 2)``) keep their pad.
Folding changes no arithmetic: the logits are bit-identical.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def symmetric_padding(pad: Sequence[int]) -> tuple[int, int] | None:
    """(rows, cols) of a ``ZeroPad2d`` (left, right, top, bottom) that a
    convolution can apply itself, or None when it pads one side more.

    >>> symmetric_padding((2, 2, 2, 2))
    (2, 2)
    >>> symmetric_padding((0, 1, 0, 1)) is None
    True
    """
    if len(pad) != 4 or min(pad) < 0:
        raise ValueError(f"a ZeroPad2d padding is 4 non-negative ints, got {tuple(pad)!r}")
    left, right, top, bottom = pad
    return (top, left) if left == right and top == bottom else None


def fold_same_padding(module: Any) -> int:
    """Replace, in place, each static-same-padding convolution under ``module``
    whose padding is symmetric (or none) by a plain ``nn.Conv2d`` with that
    padding, sharing the original parameters; returns how many were replaced.
    Call it before loading the weights (the parameter names are unchanged) or
    after (the new convolutions hold the same tensors)."""
    from torch import nn

    replaced = 0
    for parent in list(module.modules()):
        for name, child in list(parent.named_children()):
            pad = getattr(child, "static_padding", None)
            if not isinstance(child, nn.Conv2d) or pad is None or tuple(child.padding) != (0, 0):
                continue
            if isinstance(pad, nn.ZeroPad2d):
                folded = symmetric_padding(pad.padding)
                if folded is None:
                    continue  # TF's odd "same" pad: one side more, kept as a pad
            elif type(pad).__name__ == "Identity":  # torch's or the package's own
                folded = (0, 0)
            else:
                continue
            old: Any = child  # torch types its (h, w) pairs as tuple[int, ...]
            conv = nn.Conv2d(old.in_channels, old.out_channels, old.kernel_size,
                             stride=old.stride, padding=folded, dilation=old.dilation,
                             groups=child.groups, bias=child.bias is not None,
                             device=child.weight.device, dtype=child.weight.dtype)
            conv.weight = child.weight
            conv.bias = child.bias
            conv.train(child.training)
            setattr(parent, name, conv)
            replaced += 1
    return replaced
