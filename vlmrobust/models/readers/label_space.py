"""A vlm read over a whole label space (kind classification / ood; seed 002),
through the answer modes of :mod:`vlmrobust.models.readers`:

- ``likelihood:*``: log p(class name | image, question) for every class (or
  the row's candidates); the image + question prefix is computed once per row
  and shared by every name (the backend's ``continuation_logprobs``).
- ``letter``: only rows of at most 26 classes (a K-config), lettered as MCQ
  options (predict refuses larger rows before the model loads).
- ``generate``: closed world: every class name in the prompt
  (:func:`closed_world_text`), in label-space order (``fixed``) or shuffled
  per row with a seed derived from the row id (``random``; seed 002 Table 2
  varies it); the output is matched to a class name or synonym by
  :class:`vlmrobust.core.class_matcher.ClassMatcher` (no letter stage).
- ``open-world``: the question alone; right when the output names the true
  class or a synonym.

The question is the row's ``question`` when it has one, else the seed prompt's
(``what-type``: "What type of object is in this photo?"). ``prediction`` is
an index into the label space, or into the row's candidates on a K-config
row, as the scorer reads it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlmrobust.core.class_matcher import ClassMatcher
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.label_space import LabelSpace
from vlmrobust.core.matcher import names_in_text
from vlmrobust.models.backends.base import Backend, GenerationConfig, Prompt
from vlmrobust.models.label_logits import class_names, row_candidates
from vlmrobust.models.prompts import SEED_PROMPTS
from vlmrobust.models.readers.base import Reader, Reading, row_where

CLASS_ORDERS = ("fixed", "random")
DEFAULT_QUESTION = SEED_PROMPTS["what-type"].text
CLOSED_WORLD_INSTRUCTION = "Answer with the name of the class only."


def class_question(row: Mapping[str, Any], prompt_id: str) -> str:
    """A seed question prompt's text, else the row's own question, else
    ``what-type``'s."""
    seed = SEED_PROMPTS.get(prompt_id)
    if seed is not None and seed.kind == "question":
        return seed.text
    question = row.get("question")
    return question.strip() if isinstance(question, str) and question.strip() else DEFAULT_QUESTION


def presentation(row: Mapping[str, Any], n: int, order: str) -> list[int]:
    """The order the row's n classes are listed in: 0..n-1, or a permutation
    seeded by the row's id (the same on every run and rank).

    >>> presentation({"id": "a"}, 4, "fixed")
    [0, 1, 2, 3]
    >>> sorted(presentation({"id": "a"}, 4, "random")) == [0, 1, 2, 3]
    True
    """
    if order == "fixed":
        return list(range(n))
    digest = hashlib.sha256(f"class-order:{row.get('id')}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    return [int(i) for i in rng.permutation(n)]


def closed_world_text(question: str, names: Sequence[str]) -> str:
    """The closed-world user turn: the question, every class name, the instruction.

    >>> print(closed_world_text("What is this?", ["cat", "dog"]))
    What is this? Choose one from: cat, dog.
    Answer with the name of the class only.
    """
    sep = "; " if any("," in n for n in names) else ", "
    return f"{question} Choose one from: {sep.join(names)}.\n{CLOSED_WORLD_INSTRUCTION}"


class LabelSpaceReads:
    """Turns label-space rows into calls of the adapter's reader and backend."""

    def __init__(self, reader: Reader, backend: Backend, prompt_id: str, order: str,
                 options: Any = None) -> None:
        if order not in CLASS_ORDERS:
            raise VlmrobustError(f"--class-order {order!r}: use one of {', '.join(CLASS_ORDERS)}")
        self.reader, self.backend, self.prompt_id, self.order = reader, backend, prompt_id, order
        self.options = options
        self._matchers: dict[str, ClassMatcher] = {}
        self._checked: set[tuple[str, int]] = set()

    def matcher(self, space: LabelSpace) -> ClassMatcher:
        key = space.sha256()
        if key not in self._matchers:
            self._matchers[key] = ClassMatcher(space.names, [c.synonyms for c in space.classes])
        return self._matchers[key]

    def main_prompt(self, row: Mapping[str, Any], space: LabelSpace, where: str) -> Prompt:
        """The row's main model call (its rendering is ``prompt_text``)."""
        cands = row_candidates(row, len(space), where)
        names = class_names(space, cands)
        question = class_question(row, self.prompt_id)
        if self.reader.mode == "generate":
            shown = [names[i] for i in presentation(row, len(names), self.order)]
            return Prompt(closed_world_text(question, shown), image=row.get("image"))
        return Prompt(question, image=row.get("image"))

    def read(self, rows: Sequence[Mapping[str, Any]], space: LabelSpace) -> list[Reading]:
        mode = self.reader.mode
        wheres = [row_where(r, i) for i, r in enumerate(rows)]
        self.check_context(rows, space, wheres)
        if mode == "generate":
            return self._closed_world(rows, space, wheres)
        if mode == "open-world":
            return self._open_world(rows, space, wheres)
        # letter / likelihood: the row as an MCQ over its class names
        mcq = [{"id": r.get("id"), "image": r.get("image"), "question": class_question(r, self.prompt_id),
                "options": class_names(space, row_candidates(r, len(space), w))}
               for r, w in zip(rows, wheres, strict=True)]
        return self.reader.read(self.backend, mcq, self.prompt_id)

    def _generate(self, prompts: list[Prompt]) -> list[str]:
        from vlmrobust.models.readers.base import ReadOptions

        opts = self.options if isinstance(self.options, ReadOptions) else ReadOptions()
        return self.backend.generate(prompts, GenerationConfig(opts.max_new_tokens, opts.stop))

    def _closed_world(self, rows: Sequence[Mapping[str, Any]], space: LabelSpace,
                      wheres: list[str]) -> list[Reading]:
        prompts = [self.main_prompt(r, space, w) for r, w in zip(rows, wheres, strict=True)]
        texts = self._generate(prompts)
        matcher = self.matcher(space)
        out = []
        for p, t, r, w in zip(prompts, texts, rows, wheres, strict=True):
            cands = row_candidates(r, len(space), w)
            found = matcher.match(t, None if cands is None else cands.tolist())
            pred = found if found is None or cands is None else cands.tolist().index(found)
            out.append(Reading(prompt_text=self.backend.render(p), text=t, prediction=pred))
        return out

    def _open_world(self, rows: Sequence[Mapping[str, Any]], space: LabelSpace,
                    wheres: list[str]) -> list[Reading]:
        labels = []
        for r, w in zip(rows, wheres, strict=True):
            label = r.get("label")
            if isinstance(label, bool) or not isinstance(label, (int, np.integer)) \
                    or not 0 <= int(label) < len(space):
                raise VlmrobustError(f"{w}: --mode open-world needs the row's class 'label' "
                                     f"(0..{len(space) - 1}); got {label!r}")
            labels.append(int(label))
        prompts = [self.main_prompt(r, space, w) for r, w in zip(rows, wheres, strict=True)]
        texts = self._generate(prompts)
        out = []
        for p, t, r, w, y in zip(prompts, texts, rows, wheres, labels, strict=True):
            cands = row_candidates(r, len(space), w)
            hit = names_in_text(t, self.matcher(space).names_of(y))
            pred = None if not hit else (y if cands is None else cands.tolist().index(y))
            out.append(Reading(prompt_text=self.backend.render(p), text=t, prediction=pred))
        return out

    def check_context(self, rows: Sequence[Mapping[str, Any]], space: LabelSpace,
                      wheres: list[str]) -> None:
        """Refuse, in one line naming the limit, a model whose context cannot
        hold the row's call: the closed-world prompt with every name and the
        generated tokens, or the question and the longest class name. Checked
        once per (label space, row size): the longest call of that size."""
        limit_of = getattr(self.backend, "context_limit", None)
        count = getattr(self.backend, "prompt_tokens", None)
        if not callable(limit_of) or not callable(count):
            return
        for r, w in zip(rows, wheres, strict=True):
            cands = row_candidates(r, len(space), w)
            k = len(space) if cands is None else len(cands)
            if (space.sha256(), k) in self._checked:
                continue
            limit = limit_of()
            if limit is None:
                return
            tokens = self._needed(r, space, w, count)
            if tokens is None:  # the backend cannot count (a server without /tokenize)
                return
            if tokens > limit[0]:
                raise VlmrobustError(
                    f"{self.backend.name}: --mode {self.reader.mode} over label space "
                    f"{space.name!r} ({k} classes) needs {tokens} tokens per call, beyond the "
                    f"model's context of {limit[0]} ({limit[1]}); use a K-config, "
                    "--mode likelihood:sum or a model with a longer context")
            self._checked.add((space.sha256(), k))

    def _needed(self, row: Mapping[str, Any], space: LabelSpace, where: str,
                count: Any) -> int | None:
        prompt = self.main_prompt(row, space, where)
        if self.reader.mode == "generate" or self.reader.mode == "open-world":
            from vlmrobust.models.readers.base import ReadOptions

            opts = self.options if isinstance(self.options, ReadOptions) else ReadOptions()
            n = count(prompt)
            return None if n is None else int(n) + opts.max_new_tokens
        names = class_names(space, row_candidates(row, len(space), where))
        longest = max(names, key=len)
        n = count(Prompt(prompt.text, image=prompt.image, assistant_prefix=longest))
        return None if n is None else int(n)
