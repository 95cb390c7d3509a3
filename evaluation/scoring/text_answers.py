"""Answers read from the text of a predictions file: the project's matcher
(vlmrobust.core.text.matcher) applied to each row's raw model output against the
options of the dataset row it answers, so a submitter's own extraction is never
trusted; seed 002's open-world rule where the metadata says so. Rows of a
label-space kind (classification) are read against their label space's class
names by seed 002's inclusion rule (vlmrobust.core.text.class_matcher.TextRule; the
other text rules are scored beside it by :func:`class_text_correct`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vlmrobust.core.classes import N_CLASSES
from vlmrobust.core.text.class_matcher import DEFAULT_TEXT_RULE, TEXT_RULES, TextRule
from vlmrobust.core.text.matcher import class_synonyms, match_option, names_in_text
from vlmrobust.evaluation.predictions.read import PredictionsFile
from vlmrobust.evaluation.validate.dataset_index import DatasetIndex

# the option index of a row whose text answers no option: wrong, and counted
NO_ANSWER = -1
OPEN_WORLD = "open-world"


def text_answers(index: DatasetIndex, pf: PredictionsFile, pos: NDArray[np.int64],
                 open_world: bool = False) -> NDArray[np.float64]:
    """Per predictions row: the option index the matcher reads in its ``text``
    against the options of dataset row ``pos[r]`` (``NO_ANSWER`` when none),
    NaN where the row has no text or no dataset row. Synonyms are the WordNet
    lemmas of the options' classes where the dataset has ImageNet-1k
    ``option_class_ids``.

    ``open_world`` (seed 002: the model was asked without options): a row is
    answered with the right option when its text names the right option or one
    of its synonyms anywhere (names_in_text), else ``NO_ANSWER``; naming other
    classes as well does not count against it. A label-space dataset's rows are
    read by seed 002's inclusion rule in both worlds (:func:`_class_answers`)."""
    out = np.full(pf.n_rows, np.nan)
    if pf.text is not None and index.label_spaces:
        return _class_answers(index, pf, pos, out)
    if pf.text is None or index.options is None:
        return out
    cache: dict[int, tuple[str, ...]] = {}
    all_options = index.options
    class_ids = index.option_class_ids

    def synonyms(i: int) -> list[tuple[str, ...]] | None:
        ids = class_ids[i] if class_ids is not None else None
        if ids is None or len(ids) != len(all_options[i]) \
                or not all(0 <= c < N_CLASSES for c in ids):
            return None
        return [cache[c] if c in cache else cache.setdefault(c, class_synonyms(c)) for c in ids]

    for r, text in enumerate(pf.text.tolist()):
        i = int(pos[r])
        if text is None or i < 0:
            continue
        options = all_options[i]
        syn = synonyms(i)
        if open_world:
            right = int(index.answer[i])
            names = [options[right], *(syn[right] if syn is not None else ())]
            out[r] = right if names_in_text(text, names) else NO_ANSWER
            continue
        found = match_option(text, options, syn)
        out[r] = NO_ANSWER if found is None else found
    return out


def _class_answers(index: DatasetIndex, pf: PredictionsFile, pos: NDArray[np.int64],
                   out: NDArray[np.float64],
                   rule: TextRule = DEFAULT_TEXT_RULE) -> NDArray[np.float64]:
    """Label-space kinds: the text is read against the class names (and, by
    ``rule``, synonyms) of the row's label space (of its candidates in a
    K-config; no option letters) by :meth:`ClassMatcher.answer` (seed 002's
    inclusion by default, in the open and the closed world alike), the answer
    given as the row's option index (its label, or the label's position among
    the candidates)."""
    from vlmrobust.evaluation.validate.label_index import class_matcher

    assert pf.text is not None and index.labels is not None
    for r, text in enumerate(pf.text.tolist()):
        i = int(pos[r])
        if text is None or i < 0:
            continue
        matcher = class_matcher(index.label_spaces[str(index.config[i])])
        shown = index.candidates[i] if index.candidates is not None else ()
        found = matcher.answer(text, int(index.labels[i]), shown or None, rule)
        out[r] = NO_ANSWER if found is None else shown.index(found) if shown else found
    return out


def class_text_correct(index: DatasetIndex, pf: PredictionsFile,
                       row_of: NDArray[np.int64]) -> dict[str, NDArray[np.bool_]] | None:
    """Per :data:`TEXT_RULES` id, per dataset row (in index order, through
    ``row_of``): whether its text is right under that rule; rows without text
    are False under every rule (the caller keeps their own answer). None when
    the dataset has no label space or the file no text."""
    if pf.text is None or not index.label_spaces:
        return None
    pos = np.full(pf.n_rows, -1, dtype=np.int64)
    pos[row_of] = np.arange(index.n_rows)
    out = {}
    for rule in TEXT_RULES:
        got = _class_answers(index, pf, pos, np.full(pf.n_rows, np.nan), rule)[row_of]
        out[rule.id] = np.asarray(np.isfinite(got) & (got == index.answer), dtype=bool)
    return out


def is_open_world(meta: Mapping[str, Any] | None) -> bool:
    """Whether the predictions were made in seed 002's open world (metadata
    ``mode: open-world``, as ``vlmrobust predict --mode open-world`` records)."""
    return meta is not None and meta.get("mode") == OPEN_WORLD
