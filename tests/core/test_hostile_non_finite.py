"""Issue 41.3: a server (or any backend) giving NaN or -inf log-probs made
predict exit 0 with non-finite logits in the file; they are refused before
the batch is journaled, in one line naming the row, the server and the field."""

from __future__ import annotations

import math

import numpy as np
import pytest

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.batches import refuse_non_finite


@pytest.mark.parametrize(("field", "value"), [("logits", math.nan), ("logits", -math.inf),
                                              ("logp_with_image", math.inf)])
def test_non_finite_values_are_refused(field: str, value: float) -> None:
    good = np.array([0.5, -1.0, 2.0], dtype=np.float32)
    bad = good.copy()
    bad[2] = value
    row = (1, "row-b", bad if field == "logits" else good,
           {} if field == "logits" else {field: bad.tolist()})
    with pytest.raises(VlmrobustError) as err:
        refuse_non_finite("endpoint:my-server", [(0, "row-a", good, {}), row])
    msg = str(err.value)
    assert "endpoint:my-server" in msg and "'row-b'" in msg and f"field {field}" in msg
    assert "option 2" in msg and "\n" not in msg


def test_finite_and_absent_values_pass() -> None:
    refuse_non_finite("m", [(0, "a", np.zeros(3), {"logp_with_image": [0.0, -1e30]}),
                            (1, "b", None, {})])
