"""The import paths documented before issue 38 moved the modules keep working for
one minor version: each resolves to the moved object and warns."""

from __future__ import annotations

import importlib
import warnings

import pytest

MOVED = [
    ("vlmrobust.evaluation.score", "score", "vlmrobust.evaluation.scoring.dataset"),
    ("vlmrobust.evaluation.retrieval_predict", "write_retrieval_predictions", "vlmrobust.evaluation.predict.retrieval"),
    ("vlmrobust.evaluation.predictions_api", "write_predictions", "vlmrobust.evaluation.predictions.api"),
    ("vlmrobust.leaderboard.publish", "build_site", "vlmrobust.leaderboard.site.publish"),
    ("vlmrobust.leaderboard.verify", "load_verified_submissions", "vlmrobust.leaderboard.trust.verify"),
    ("vlmrobust.metrics.ood", "auroc", "vlmrobust.metrics.holistic.ood"),
    ("vlmrobust.metrics.retrieval", "retrieval_ranks", "vlmrobust.metrics.holistic.retrieval"),
    ("vlmrobust.evaluation.predict", "predict_dataset", "vlmrobust.evaluation.predict.dataset"),
    ("vlmrobust.evaluation.validate", "validate", "vlmrobust.evaluation.validate.check"),
]


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_old_path_warns_and_resolves_to_the_moved_object(old: str, name: str, new: str) -> None:
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        obj = getattr(module, name)
    assert obj is getattr(importlib.import_module(new), name)


@pytest.mark.parametrize(("old", "name", "new"), MOVED)
def test_a_name_the_new_module_lacks_is_an_attribute_error(old: str, name: str, new: str) -> None:
    module = importlib.import_module(old)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with pytest.raises(AttributeError):
            _ = module.no_such_name_anywhere
