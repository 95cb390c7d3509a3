"""CLIP and VLM label texts default to OpenAI CLIP's ImageNet class names
(issue 33 item 7): seed 001 "use[s] the default prompt template provided by [1]"
(OpenAI CLIP) and seed 002 evaluates with CLIP's names; the curated clean names
(19 of 1,000 differ) are the named option ``class_names: curated``. The OpenAI
names are checked against the installed open_clip package's own list."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.fixtures.classification_layouts import raw_spec
from tests.fixtures.clip import make_open_clip
from vlmrobust.builders.classification.spaces import imagenet_space
from vlmrobust.builders.classification.spec import parse_spec
from vlmrobust.core.classes import load_imagenet_classes
from vlmrobust.core.errors import SpecError
from vlmrobust.core.label_space import ClassEntry, LabelSpace
from vlmrobust.models.label_logits import class_names


def _openai_names() -> list[str]:
    meta = pytest.importorskip("open_clip.zero_shot_metadata")
    return list(meta.IMAGENET_CLASSNAMES)


def test_the_package_table_holds_open_clips_openai_names() -> None:
    assert [c.clip_name for c in load_imagenet_classes()] == _openai_names()


def test_imagenet_label_texts_are_openais_names_by_default_and_curated_on_request() -> None:
    openai = _openai_names()
    space = imagenet_space("imagenet-1k", tuple(range(1000)))
    assert list(space.texts) == openai
    differ = [i for i, c in enumerate(space.classes) if c.text is not None]
    assert len(differ) == 19 and 282 in differ and 472 in differ
    assert space.texts[282] == "tiger cat" and space.names[282] == "a cat having a striped coat"
    assert space.texts[472] == "canoe" and space.names[472] == "kayak"
    # names stay unique (OpenAI's are not: 657 and 744 are both "missile")
    assert space.texts[657] == space.texts[744] == "missile" and len(set(space.names)) == 1000
    curated = imagenet_space("imagenet-1k", tuple(range(1000)), "curated")
    assert curated.texts == curated.names == space.names
    sub = imagenet_space("imagenet-r", (282, 472))
    assert class_names(sub, None) == ["tiger cat", "canoe"]
    assert class_names(sub, np.array([1, 0])) == ["canoe", "tiger cat"]


def test_a_label_text_round_trips_and_is_absent_from_spaces_without_one() -> None:
    ls = LabelSpace("t", (ClassEntry("kayak", ("canoe",), text="canoe"), ClassEntry("dog")))
    assert LabelSpace.from_json_bytes(ls.to_json_bytes(), "x") == ls
    assert b'"text": "canoe"' in ls.to_json_bytes()
    plain = LabelSpace("t", (ClassEntry("kayak"), ClassEntry("dog")))
    assert b'"text"' not in plain.to_json_bytes()  # other families' bytes are unchanged
    with pytest.raises(ValueError, match="non-empty string"):
        ClassEntry("kayak", text=" ")


def test_the_spec_names_the_choice() -> None:
    assert parse_spec(raw_spec(), Path("x.yaml")).class_names == "openai"
    assert parse_spec(raw_spec(class_names="curated"), Path("x.yaml")).class_names == "curated"
    with pytest.raises(SpecError, match="class_names 'wordnet' is not one of openai, curated"):
        parse_spec(raw_spec(class_names="wordnet"), Path("x.yaml"))


def test_clip_embeds_the_label_texts_not_the_display_names(tmp_path: Path) -> None:
    from vlmrobust.models import load_adapter

    folder = make_open_clip(tmp_path / "clip", seed=2)
    adapter = load_adapter(f"clip:local-dir:{folder}", device="cpu", prompt="photo-period")
    space = imagenet_space("pair", (282, 472))
    got = adapter.class_embeddings(space).numpy()
    want = adapter.embed_texts(["tiger cat", "canoe"])
    names = adapter.embed_texts(["a cat having a striped coat", "kayak"])
    np.testing.assert_allclose(got, want, atol=1e-6)
    assert not np.allclose(got, names, atol=1e-3)
