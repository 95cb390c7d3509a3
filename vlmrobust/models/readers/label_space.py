"""A vlm read over a whole label space (kind classification / ood; seed 002),
through the answer modes of :mod:`vlmrobust.models.readers`:

- ``likelihood:*``: log p(class name | image, question) for every class (or
  the row's candidates); the image + question prefix is computed once per row
  and shared by every name (the backend's ``continuation_logprobs``).
- ``letter``: only rows of at most 26 classes (a K-config), lettered as MCQ
  options (predict refuses larger rows before the model loads).
- ``generate``: closed world: every class name in the prompt
  (:meth:`LabelSpacePrompt.closed_world`), shuffled per row with a seed derived
  from the row id (``random``, the default: seed 002 Table 1) or in label-space
  order (``fixed``; Table 2's control).
- ``open-world``: the question alone.

A generated output (either world) is read as the scorer reads it: right when it
names the true class (seed 002's inclusion rule,
:meth:`vlmrobust.core.text.class_matcher.ClassMatcher.answer`), else the one class
the strict matcher finds (wrong), else no answer.

Every call is rendered from one :data:`vlmrobust.models.label_space_prompts.LABEL_SPACE_PROMPTS`
entry (default ``what-type``: "What type of object is in this photo?"), whose
id the predictions record; a label-space row has no question of its own.
``prediction`` is an index into the label space, or into the row's candidates
on a K-config row, as the scorer reads it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.label_space import LabelSpace
from vlmrobust.core.text.class_matcher import ClassMatcher
from vlmrobust.models.backends.base import Backend, GenerationConfig, Prompt
from vlmrobust.models.label_logits import class_names, row_candidates
from vlmrobust.models.label_space_prompts import LABEL_SPACE_PROMPTS, resolve_label_space_prompt
from vlmrobust.models.readers.base import Reader, Reading, row_where

CLASS_ORDERS = ("fixed", "random")
#: seed 002 App. B.9: Table 1's closed world lists the labels "in a random order for
#: each question" (random_shuffle); ``fixed`` ("the default dataset label order") is
#: Table 2's control
DEFAULT_CLASS_ORDER = "random"


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


class LabelSpaceReads:
    """Turns label-space rows into calls of the adapter's reader and backend,
    rendered from the label-space prompt ``prompt`` names (None: the default;
    one that cannot serve ``reader``'s mode is refused)."""

    def __init__(self, reader: Reader, backend: Backend, prompt: str | None, order: str,
                 options: Any = None) -> None:
        if order not in CLASS_ORDERS:
            raise VlmrobustError(f"--class-order {order!r}: use one of {', '.join(CLASS_ORDERS)}")
        self.prompt_id = resolve_label_space_prompt(prompt, reader.mode)
        self.prompt = LABEL_SPACE_PROMPTS[self.prompt_id]
        self.reader, self.backend, self.order = reader, backend, order
        self.options = options
        self._matchers: dict[str, ClassMatcher] = {}
        self._checked: set[tuple[str, int]] = set()

    def matcher(self, space: LabelSpace) -> ClassMatcher:
        key = space.sha256()
        if key not in self._matchers:
            self._matchers[key] = ClassMatcher.for_space(space)
        return self._matchers[key]

    def main_prompt(self, row: Mapping[str, Any], space: LabelSpace, where: str) -> Prompt:
        """The row's main model call (its rendering is ``prompt_text``)."""
        if self.reader.mode == "generate":
            names = class_names(space, row_candidates(row, len(space), where))
            shown = [names[i] for i in presentation(row, len(names), self.order)]
            return Prompt(self.prompt.closed_world(shown), image=row.get("image"))
        if self.reader.mode == "open-world":
            return Prompt(self.prompt.open_world, image=row.get("image"))
        return Prompt(self.prompt.question, image=row.get("image"))

    def read(self, rows: Sequence[Mapping[str, Any]], space: LabelSpace) -> list[Reading]:
        mode = self.reader.mode
        wheres = [row_where(r, i) for i, r in enumerate(rows)]
        self.check_context(rows, space, wheres)
        if mode in ("generate", "open-world"):  # closed world lists the names; open world not
            return self._generated(rows, space, wheres)
        # letter / likelihood: the row as an MCQ over its classes written as answers,
        # read under the entry's letter instruction (an instruction id rewords nothing)
        mcq = [{"id": r.get("id"), "image": r.get("image"), "question": self.prompt.question,
                "options": self.prompt.answers(class_names(space, row_candidates(r, len(space), w)))}
               for r, w in zip(rows, wheres, strict=True)]
        return self.reader.read(self.backend, mcq, self.prompt.letter_instruction)

    def _generate(self, prompts: list[Prompt]) -> list[str]:
        from vlmrobust.models.readers.base import ReadOptions

        opts = self.options if isinstance(self.options, ReadOptions) else ReadOptions()
        return self.backend.generate(prompts, GenerationConfig(opts.max_new_tokens, opts.stop))

    def _generated(self, rows: Sequence[Mapping[str, Any]], space: LabelSpace,
                   wheres: list[str]) -> list[Reading]:
        """Generate, then read each text as the scorer does: seed 002's
        inclusion of the row's class name (:meth:`ClassMatcher.answer`)."""
        labels = []
        for r, w in zip(rows, wheres, strict=True):
            label = r.get("label")
            if isinstance(label, bool) or not isinstance(label, (int, np.integer)) \
                    or not 0 <= int(label) < len(space):
                raise VlmrobustError(f"{w}: --mode {self.reader.mode} needs the row's class "
                                     f"'label' (0..{len(space) - 1}); got {label!r}")
            labels.append(int(label))
        prompts = [self.main_prompt(r, space, w) for r, w in zip(rows, wheres, strict=True)]
        texts = self._generate(prompts)
        matcher = self.matcher(space)
        out = []
        for p, t, r, w, y in zip(prompts, texts, rows, wheres, labels, strict=True):
            cands = row_candidates(r, len(space), w)
            shown = None if cands is None else cands.tolist()
            found = matcher.answer(t, y, shown)
            pred = found if found is None or shown is None else shown.index(found)
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
        answers = self.prompt.answers(class_names(space, row_candidates(row, len(space), where)))
        longest = max(answers, key=len)
        n = count(Prompt(prompt.text, image=prompt.image, assistant_prefix=longest))
        return None if n is None else int(n)
