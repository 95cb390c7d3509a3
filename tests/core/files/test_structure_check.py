"""check_structure (vlmrobust/core/files/bounded.py) walks containers level by
level, counting scalars without visiting them (issue 39.3: it was ~3/4 of the
endpoint client's response parsing). It must refuse exactly what a plain
recursive count refuses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.bounded import check_structure


def reference(obj: Any, depth: int = 0) -> tuple[int, int]:
    """(values, deepest level holding a value): every key and value is one."""
    if isinstance(obj, dict):
        children = [*obj.keys(), *obj.values()]
    elif isinstance(obj, (list, tuple)):
        children = list(obj)
    else:
        return 1, depth
    counts = [reference(c, depth + 1) for c in children]
    return 1 + sum(n for n, _ in counts), max([depth, *(d for _, d in counts)])


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=2), inner,
                                                                max_size=4),
    max_leaves=40)


@settings(max_examples=300, deadline=None)
@given(json_values, st.integers(0, 6), st.integers(1, 60))
def test_refuses_exactly_what_a_recursive_count_refuses(obj: Any, max_depth: int,
                                                        max_nodes: int) -> None:
    nodes, deepest = reference(obj)
    refused = nodes > max_nodes or deepest > max_depth
    try:
        check_structure(obj, "x", max_depth=max_depth, max_nodes=max_nodes)
    except VlmrobustError as exc:
        assert refused, (nodes, deepest)
        if deepest <= max_depth:
            assert "more than" in str(exc)
        elif nodes <= max_nodes:
            assert "nested deeper" in str(exc)
    else:
        assert not refused, (nodes, deepest)


def test_shared_nodes_count_at_every_use() -> None:
    node: Any = [1, 2]
    for _ in range(30):  # 2**30 leaves through aliases: refused without visiting them
        node = [node, node]
    with pytest.raises(VlmrobustError, match="more than 1000 values"):
        check_structure(node, "x", max_depth=64, max_nodes=1000)
