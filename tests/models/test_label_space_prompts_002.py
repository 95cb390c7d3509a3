"""Seed 002's prompt variations over a label space (issue 33 item 4): its three
wordings (App. B.1, written out here rather than read from the registry), its
zero-shot chain of thought ("adding 'let's think step by step' at the end of
the prompt", §3.1), the closed world as §2.3 words it, and Table 1's class
order: "in a random order for each question" (App. B.9), seeded by the row id."""

from __future__ import annotations

import pytest

from vlmrobust.builders.classification.spaces import imagenet_space
from vlmrobust.core.errors import VlmrobustError
from vlmrobust.evaluation.predict.label_rows import label_space_meta
from vlmrobust.models.label_space_prompts import LABEL_SPACE_PROMPTS, resolve_label_space_prompt
from vlmrobust.models.readers import parse_mode
from vlmrobust.models.readers.label_space import LabelSpaceReads
from vlmrobust.models.vlm import VlmAdapter

SEED = {"what-type": "What type of object is in this photo?",
        "identify": "Identify the object in this image.",
        "main-object": "What is the main object depicted in this photograph?"}
COT = "Let's think step by step."


class Scripted:
    """A backend whose generations are given (only the prompts are under test)."""

    name = "scripted"
    capabilities = frozenset({"generate"})

    def generate(self, prompts: list, config: object) -> list[str]:
        return ["" for _ in prompts]

    def render(self, prompt: object) -> str:
        return str(getattr(prompt, "text", ""))


@pytest.mark.parametrize("prompt_id", list(SEED))
def test_the_three_seed_wordings_ask_in_every_mode(prompt_id: str) -> None:
    question = SEED[prompt_id]
    for mode in ("generate", "open-world", "likelihood:avg", "letter"):
        assert resolve_label_space_prompt(prompt_id, mode) == prompt_id
    entry = LABEL_SPACE_PROMPTS[prompt_id]
    assert entry.question == question and entry.open_world == question
    # §2.3: "<image> What type of object is in this photo? Choose one from <class name A>, ..."
    assert entry.closed_world(["tench", "goldfish"]) == f"{question} Choose one from tench, goldfish."


@pytest.mark.parametrize("prompt_id", list(SEED))
def test_chain_of_thought_ends_the_prompt_of_a_generating_mode(prompt_id: str) -> None:
    cot = f"{prompt_id}-cot"
    assert resolve_label_space_prompt(cot, "generate") == resolve_label_space_prompt(cot, "open-world") == cot
    entry = LABEL_SPACE_PROMPTS[cot]
    assert entry.closed_world(["tench", "goldfish"]) == \
        f"{SEED[prompt_id]} Choose one from tench, goldfish. {COT}"
    assert entry.open_world == f"{SEED[prompt_id]} {COT}"
    with pytest.raises(VlmrobustError, match="chain of thought asks a model that generates") as err:
        resolve_label_space_prompt(cot, "likelihood:sum")
    assert "\n" not in str(err.value)


def test_the_earlier_closed_world_instruction_stays_a_named_prompt() -> None:
    assert resolve_label_space_prompt("what-type-name-only", "generate") == "what-type-name-only"
    with pytest.raises(VlmrobustError, match="it words only the closed world"):
        resolve_label_space_prompt("what-type-name-only", "open-world")  # would ask as what-type
    entry = LABEL_SPACE_PROMPTS["what-type-name-only"]
    assert entry.closed_world(["tench", "goldfish"]) == (
        "What type of object is in this photo? Choose one from: tench, goldfish.\n"
        "Answer with the name of the class only.")


def test_closed_world_order_is_random_per_row_by_default_and_seeded_by_the_row_id() -> None:
    adapter = VlmAdapter("scripted", Scripted(), parse_mode("generate"))  # type: ignore[arg-type]
    assert label_space_meta(adapter, "classification")["class_order"] == "random"
    space = imagenet_space("in1k", tuple(range(1000)))
    reads = adapter._label_reads()
    rows = [{"id": f"imagenet-val/{i}", "image": None, "label": 1, "candidates": [0, 1, 2, 3, 4, 5]}
            for i in range(8)]

    def listed(row: dict) -> str:
        return reads.main_prompt(row, space, "row").text.split("Choose one from ", 1)[1]

    orders = [listed(r) for r in rows]
    assert len(set(orders)) > 1  # shuffled per row
    assert orders == [listed(r) for r in rows]  # the same row id, the same order
    fixed = LabelSpaceReads(parse_mode("generate"), Scripted(), None, "fixed")  # type: ignore[arg-type]
    assert {fixed.main_prompt(r, space, "row").text for r in rows} == {
        "What type of object is in this photo? Choose one from tench, goldfish, great white shark, "
        "tiger shark, hammerhead shark, electric ray."}
    explicit = VlmAdapter("s", Scripted(), parse_mode("generate"), class_order="fixed")  # type: ignore[arg-type]
    assert label_space_meta(explicit, "classification")["class_order"] == "fixed"


def test_prompts_lists_the_seed_wordings_and_their_chain_of_thought(
        capsys: pytest.CaptureFixture[str]) -> None:
    from vlmrobust.cli.main import main

    assert main(["prompts"]) == 0
    out = capsys.readouterr().out
    assert SEED["main-object"] in out and f"... {COT}" in out
