"""A hand-made imagewikiqa candidate question, shared by the imagewikiqa unit
tests (every field but the ones a test sets is a valid default)."""

from __future__ import annotations

from vlmrobust.builders.imagewikiqa.question import Candidate


def cand(wnid: str = "n01440764", label: int = 0, q: str = "Where is this object from?",
         choices: tuple[str, ...] = ("Europe", "Asia", "Africa", "Peru"), answer: int = 0,
         kind: str = "test") -> Candidate:
    return Candidate(wnid=wnid, label=label, question=q, choices=choices, answer=answer,
                     reference="ref", kind=kind)

