"""The LLM backend of imagewikiqa against a fake OpenAI-compatible server on
127.0.0.1 (no network): parsing the recorded reply, strict rejection of
malformed JSON, retries, unreachable endpoints, and a whole build with the LLM
generator + LLM answerer where one class has no text and one gets malformed
replies (both reported, the build goes on)."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from vlmrobust.builders.families import BuildOptions
from vlmrobust.builders.imagewikiqa.generate.llm import (
    LLMAnswerer,
    LLMGenerator,
    LLMResponseError,
    generation_messages,
    parse_questions,
)
from vlmrobust.builders.imagewikiqa.generate.llm_client import ChatClient, EndpointError
from vlmrobust.builders.imagewikiqa.sources.knowledge import ClassKnowledge
from vlmrobust.core.errors import VlmrobustError

DATA = Path(__file__).resolve().parents[2] / "data"
RECORDED = DATA / "imagewikiqa_llm_response.json"
WIKI = DATA / "imagewikiqa_wiki"

TENCH = ClassKnowledge(0, "n01440764", "tench", ("tench", "Tinca tinca", "doctor fish"), "",
                       (), frozenset(), "", (), frozenset(), (), (), (), ())


def recorded_content() -> str:
    return str(json.loads(RECORDED.read_text())["choices"][0]["message"]["content"])


def completion(content: str) -> bytes:
    return json.dumps({"id": "x", "object": "chat.completion", "model": "fake",
                       "choices": [{"index": 0, "message": {"role": "assistant",
                                                            "content": content},
                                    "finish_reason": "stop"}]}).encode()


class FakeChat:
    """A scripted OpenAI-compatible server: generation prompts get the recorded
    reply for the tench, malformed JSON for the great white shark; answer
    prompts get the right letter when the class is named and a wrong one
    otherwise (except for one question that it 'guesses' right blind)."""

    GUESSABLE = "In which part of the world is this object originally found?"

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        recorded = json.loads(recorded_content().strip().removeprefix("```json").strip("`\n "))
        self.truth = {q["question"]: q["choices"][q["answer"]] for q in recorded["questions"]}

    def reply(self, body: dict[str, Any]) -> str:
        self.requests.append(body)
        prompt = body["messages"][-1]["content"]
        first = body["messages"][0]["content"]
        if "multiple-choice questions for a" in first:  # a generation prompt, or its retry
            if "questions for a tench " in first:
                return recorded_content()
            return '{"questions": [{"question": "What does this object eat?", "choices": '
        assert prompt.startswith("Answer the multiple-choice question below.")
        question = prompt.splitlines()[1]
        options = re.findall(r"^([A-D])\. (.*)$", prompt, re.MULTILINE)
        told = "Try your best to guess" not in prompt
        if told:  # the seed's step 1: the name stands where "this object" was
            assert "this object" not in question.lower()
            question = re.sub(r"\btench\b", "this object", question)
            question = re.sub(r"\bTench\b", "This object", question)
        right = next(letter for letter, text in options if text == self.truth[question])
        if told or question == self.GUESSABLE:
            return right
        return next(letter for letter, _ in options if letter != right)


@pytest.fixture
def fake_server() -> Iterator[tuple[str, FakeChat]]:
    chat = FakeChat()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path != "/v1/chat/completions":
                self.send_response(404)
                self.end_headers()
                return
            data = completion(chat.reply(body))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", chat
    finally:
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# --- parsing ----------------------------------------------------------------------------

def test_parses_the_recorded_reply() -> None:
    questions = parse_questions(recorded_content(), TENCH)
    assert len(questions) == 5
    family = questions[1]
    assert family.question == "Which family does this object belong to?"
    assert family.answer_text == "Cyprinidae"
    assert family.reference.startswith("It is a member of the carp family")
    assert all(len(set(q.choices)) == 4 and q.wnid == "n01440764" for q in questions)


@pytest.mark.parametrize("reply, message", [
    ('{"questions": [{"question": "Q?", "choices": ["a", "b"', "not valid JSON"),
    ("Sure! Here are five questions: 1. ...", "not valid JSON"),
    ('{"items": []}', "at least one question"),
    ('{"questions": [{"question": "Q?", "choices": ["a", "b", "c"], "answer": 0, '
     '"reference": "r"}]}', "'choices' must be 4"),
    ('{"questions": [{"question": "Q?", "choices": ["a", "b", "c", "d"], "answer": 7, '
     '"reference": "r"}]}', "'answer' must be an index"),
    ('{"questions": [{"question": "Q?", "choices": ["a", "b", "c", "d"], "answer": 1}]}',
     "missing field"),
    ('{"questions": [{"question": "Q?", "choices": ["a", "a", "c", "d"], "answer": 1, '
     '"reference": "r"}]}', "not distinct"),
])
def test_malformed_replies_are_rejected_clearly(reply: str, message: str) -> None:
    with pytest.raises(LLMResponseError, match=message) as info:
        parse_questions(reply, TENCH)
    assert "n01440764 (tench)" in str(info.value)
    assert "\n" not in str(info.value)


def test_letter_answers_and_bare_lists_are_accepted() -> None:
    reply = json.dumps([{"question": "Q about this object?", "choices": ["a", "b", "c", "d"],
                         "answer": "C", "reference": ["s1", "s2"]}])
    (q,) = parse_questions(reply, TENCH)
    assert q.answer == 2 and q.reference == "s1 s2"


def test_default_prompt_is_the_seeds() -> None:
    (user,) = generation_messages(TENCH, "Some article text.", 5)
    text = user["content"]
    assert user["role"] == "user"
    assert text.startswith("Come up with 5 multiple-choice questions for a tench to examine "
                           "the knowledge of an expert.")
    assert 'Use "this object" rather than "tench" in the questions.' in text
    assert "Article 1: Some article text." in text
    assert '"question" (str), "choices" (list[str]), "answer" (int, starting from 0))' in text
    assert text.endswith("Output in JSON format.")


def test_strict_prompt_names_every_synonym() -> None:
    (_system, user) = generation_messages(TENCH, "Some article text.", 5, "strict-v1")
    text = user["content"]
    assert "Write 5 multiple-choice questions" in text
    assert '"Tinca tinca"' in text and '"doctor fish"' in text
    assert text.rstrip().endswith("Some article text.")
    with pytest.raises(ValueError, match="unknown generation prompt"):
        generation_messages(TENCH, "x", 5, "v0")


def test_reply_under_another_key_is_accepted() -> None:
    reply = json.dumps({"quiz_questions": [{"question": "Q about this object?",
                                            "choices": ["a", "b", "c", "d"], "answer": 1,
                                            "reference": "r"}]})
    assert parse_questions(reply, TENCH)[0].answer_text == "b"


# --- client and retries -----------------------------------------------------------------

def test_generator_through_the_fake_server(fake_server: tuple[str, FakeChat]) -> None:
    url, chat = fake_server
    client = ChatClient(base_url=url, model="fake", api_key="sk-test", backoff_s=0)
    questions = LLMGenerator(client).generate(TENCH, (WIKI / "n01440764.txt").read_text())
    assert [q.answer_text for q in questions][:2] == ["Europe and western Asia", "Cyprinidae"]
    assert chat.requests[0]["model"] == "fake"
    assert [m["role"] for m in chat.requests[0]["messages"]] == ["user"]
    assert chat.requests[0]["temperature"] == 0.0


def test_generator_retries_a_malformed_reply_then_succeeds() -> None:
    replies = iter(["not json at all", recorded_content()])
    calls: list[dict[str, Any]] = []

    def transport(url: str, body: bytes, headers: Any, timeout: float) -> tuple[int, bytes]:
        calls.append(json.loads(body))
        return 200, completion(next(replies))

    client = ChatClient(base_url="http://llm.invalid/v1", model="m", transport=transport,
                        max_retries=2, backoff_s=0)
    assert len(LLMGenerator(client).generate(TENCH, "text")) == 5
    assert len(calls) == 2
    # The retry shows the model its bad reply and the parse error.
    retry = calls[1]["messages"]
    n = len(calls[0]["messages"])
    assert retry[:n] == calls[0]["messages"]
    assert retry[n] == {"role": "assistant", "content": "not json at all"}
    assert "not valid JSON" in retry[n + 1]["content"]


def test_generator_gives_up_after_retries() -> None:
    def transport(url: str, body: bytes, headers: Any, timeout: float) -> tuple[int, bytes]:
        return 200, completion("```json\n{broken\n```")

    client = ChatClient(base_url="http://llm.invalid/v1", model="m", transport=transport,
                        max_retries=2, backoff_s=0)
    with pytest.raises(LLMResponseError, match="after 3 attempts"):
        LLMGenerator(client).generate(TENCH, "text")


def test_client_retries_server_errors_with_backoff_and_fails_fast_on_4xx() -> None:
    statuses = iter([503, 429, 200])
    waits: list[float] = []

    def transport(url: str, body: bytes, headers: Any, timeout: float) -> tuple[int, bytes]:
        assert headers["Authorization"] == "Bearer k"
        return next(statuses), completion("ok")

    client = ChatClient(base_url="http://x.invalid/v1", model="m", api_key="k",
                        transport=transport, sleep=waits.append, backoff_s=0.5)
    assert client.complete([{"role": "user", "content": "hi"}]) == "ok"
    assert waits == [0.5, 1.0]

    client = ChatClient(base_url="http://x.invalid/v1", model="m",
                        transport=lambda *a: (401, b'{"error": "bad key"}'))
    with pytest.raises(EndpointError, match="HTTP 401"):
        client.complete([{"role": "user", "content": "hi"}])


def test_unreachable_endpoint_is_a_clear_error() -> None:
    client = ChatClient(base_url=f"http://127.0.0.1:{closed_port()}/v1", model="m",
                        max_retries=1, backoff_s=0, timeout_s=5)
    with pytest.raises(EndpointError, match=r"cannot reach .* after 2 attempts") as info:
        client.complete([{"role": "user", "content": "hi"}])
    assert "VLMROBUST_LLM_BASE_URL" in str(info.value)


def test_llm_answerer_letters(fake_server: tuple[str, FakeChat]) -> None:
    url, _ = fake_server
    questions = parse_questions(recorded_content(), TENCH)
    answerer = LLMAnswerer(ChatClient(base_url=url, model="fake", backoff_s=0))
    told = answerer.answer(questions, ["tench"] * 5)
    blind = answerer.answer(questions, [None] * 5)
    assert told == [q.answer for q in questions]
    assert blind[0] == questions[0].answer  # the guessable one
    assert all(b != q.answer for b, q in zip(blind[1:], questions[1:], strict=True))


# --- a whole LLM build -------------------------------------------------------------------

VAL_FILES = {
    "n01440764": ["ILSVRC2012_val_00000293", "ILSVRC2012_val_00006697", "ILSVRC2012_val_00007197"],
    "n01443537": ["ILSVRC2012_val_00000262", "ILSVRC2012_val_00000307", "ILSVRC2012_val_00000994"],
    "n01484850": ["ILSVRC2012_val_00002338", "ILSVRC2012_val_00002752", "ILSVRC2012_val_00004329"],
}


def make_source_root(root: Path) -> Path:
    """A tiny imagenet-val layout (class folders, real val file names so that the
    ReaL labels apply) with small seeded noise JPEGs."""
    from PIL import Image

    for i, (wnid, names) in enumerate(sorted(VAL_FILES.items())):
        folder = root / "imagenet-val" / wnid
        folder.mkdir(parents=True)
        for j, name in enumerate(names):
            pixels = np.random.default_rng(i * 10 + j).integers(0, 255, (32, 32, 3), np.uint8)
            Image.fromarray(pixels).save(folder / f"{name}.JPEG", quality=90)
    return root


def llm_spec(url: str) -> dict[str, Any]:
    return {
        "family": "imagewikiqa", "name": "imagewikiqa", "version": "0.0.1-test", "seed": 3,
        "classes": sorted(VAL_FILES),
        "text_source": {"kind": "wikipedia", "dir": str(WIKI)},
        "generator": {"kind": "llm", "llm": {"base_url": url, "model": "fake", "max_retries": 1,
                                             "backoff_s": 0, "timeout_s": 10}},
        "filter": {"answerer": "llm"},
    }


def test_llm_build_reports_bad_classes_and_goes_on(
    fake_server: tuple[str, FakeChat], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from vlmrobust.builders.imagewikiqa.build import build
    from vlmrobust.core.datadir import read_table

    url, _ = fake_server
    root = make_source_root(tmp_path / "src")
    out = tmp_path / "out"
    manifest = build(llm_spec(url), tmp_path / "spec.yaml",
                     BuildOptions(out=out, source_root=root, progress=False))
    err = capsys.readouterr().err
    assert "skipped n01443537" in err and "no Wikipedia article" in err
    assert "skipped n01484850" in err and "not valid JSON" in err
    assert set(manifest["failures"]) == {"n01443537", "n01484850"}
    # 5 recorded questions; the guessable one is filtered out by step 2.
    assert manifest["filter"]["kept"] == 4
    assert manifest["filter"]["dropped"] == {"guessed_without_name": 1}
    # 3 knowledge questions x 3 images; the family (taxonomy) question may fill
    # at most 10% of the rows: 1 of 10.
    rows = read_table(out, "default", ["question", "options", "answer", "wnid"]).to_pylist()
    assert len(rows) == 10
    assert sum(r["question"] == "Which family does this object belong to?" for r in rows) == 1
    assert manifest["naming_share"] == 0.1
    assert {r["wnid"] for r in rows} == {"n01440764"}
    assert FakeChat.GUESSABLE not in {r["question"] for r in rows}
    counts = np.bincount([r["answer"] for r in rows], minlength=4)
    assert counts.max() - counts.min() <= 1
    card = (out / "README.md").read_text()
    assert "2 classes produced no candidates" in card
    deviations = card.split("## Deviations from the seed", 1)[1].split("\n## ", 1)[0]
    assert "the chat model `fake` (the seed: GPT-4) at temperature 0, with the seed's own " \
           "generation prompt" in deviations
    assert "\"following Bujwid et al.\"" in deviations and "MiniLM text-similarity" not in deviations
    assert "- Rows: 10 (**the seed has 2,000**" in deviations


def test_llm_build_with_unreachable_endpoint_writes_nothing(tmp_path: Path) -> None:
    from vlmrobust.builders.imagewikiqa.build import build

    root = make_source_root(tmp_path / "src")
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("previous build")
    spec = llm_spec(f"http://127.0.0.1:{closed_port()}/v1")
    with pytest.raises(VlmrobustError, match="no question survived"):
        build(spec, tmp_path / "spec.yaml", BuildOptions(out=out, source_root=root,
                                                         progress=False))
    assert [p.name for p in out.iterdir()] == ["keep.txt"]


def test_llm_answerer_resumes_from_its_cache_and_reports_endpoint_failures(
    tmp_path: Path,
) -> None:
    questions = parse_questions(recorded_content(), TENCH)
    calls: list[bytes] = []

    def transport(url: str, body: bytes, headers: Any, timeout: float) -> tuple[int, bytes]:
        calls.append(body)
        return 200, completion("B")

    cache = tmp_path / "cache" / "answers.jsonl"
    client = ChatClient(base_url="http://x.invalid/v1", model="m", transport=transport)
    first = LLMAnswerer(client, cache_path=cache).answer(questions, ["tench"] * 5)
    assert first == [1] * 5 and len(calls) == 5
    with cache.open("a") as f:
        f.write('["cut short')  # a crash mid-line must not break the resume
    again = LLMAnswerer(client, cache_path=cache).answer(questions, ["tench"] * 5)
    assert again == first and len(calls) == 5  # all from the cache

    down = ChatClient(base_url="http://x.invalid/v1", model="m", max_retries=0,
                      transport=lambda *a: (503, b""))
    answerer = LLMAnswerer(down)
    assert answerer.answer(questions, [None] * 5) == [-1] * 5
    assert "HTTP 503" in answerer.errors["n01440764"]
