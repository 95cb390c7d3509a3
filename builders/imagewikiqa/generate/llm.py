"""LLM question generator and answerer through an OpenAI-compatible chat API.

The default generation prompt is the seed's own ("paper-v1"; "strict-v1" is a
stricter variant); the spec names the version, and it is part of every cache
key. The answerer asks the seed's two filter prompts (told: the class name in
place of "this object"; blind: "try your best to guess"). The reply is parsed strictly; a reply
that breaks the format is asked for again (up to ``max_retries`` times)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vlmrobust.builders.imagewikiqa.generate.llm_client import ChatClient
from vlmrobust.builders.imagewikiqa.question import N_CHOICES, Candidate
from vlmrobust.builders.imagewikiqa.sources.knowledge import ClassKnowledge
from vlmrobust.core.errors import VlmrobustError

MAX_ARTICLE_CHARS = 12000
LETTERS = "ABCD"
RULE = "=" * 63

# The seed's generation prompt (Zhang et al. 2024, ImageWikiQA; the authors'
# imagewikiqa/gen_data.ipynb in github.com/yuhui-zh15/VLMClassifier): one user
# message, the class name, its Wikipedia article(s) between rules, five
# questions, "this object" for the name, JSON out. Its wording is kept so that
# builds are comparable with the seed's; "paper-v1" is the default.
PAPER_V1 = """Come up with {n} multiple-choice questions for a {name} to examine the knowledge of an expert.

The questions should come from the following Wikipedia articles on {name}:
```
{articles}
```

**Instruction**:
Each question should have four choices, one of which is the correct answer.
Note that the Wikipedia articles will not be accessible to the test-takers, so please do not reference specific details from the articles in the questions.
Use "this object" rather than "{name}" in the questions. We want to give test-takers an image of this object, not the word itself.
Each question should have four fields: "question" (str), "choices" (list[str]), "answer" (int, starting from 0)), and "reference" (str, original sentences from Wikipedia articles).
Output in JSON format."""

# This project's stricter variant: a system message, every synonym forbidden,
# knowledge topics named, an exact JSON shape.
STRICT_SYSTEM = "You write multiple-choice quiz questions from encyclopedia articles. " \
                "You answer with JSON only."
STRICT_V1 = """Below is the Wikipedia article about "{name}".

Write {n} multiple-choice questions about this object that can be answered from the article.
Rules:
- Call the object "this object". Never write its name "{name}" or any other name of it ({synonyms}), not even in the choices.
- Ask about knowledge (origin, native region, uses, history, behaviour, parts, materials), not about how one particular photo looks.
- Each question has exactly 4 distinct choices and exactly one correct answer.
- "answer" is the 0-based index of the correct choice.
- "reference" quotes the sentence(s) of the article that support the answer.

Reply with JSON only, in exactly this form:
{{"questions": [{{"question": "...", "choices": ["...", "...", "...", "..."], "answer": 0, "reference": "..."}}]}}

Article:
{article}"""

PROMPTS = ("paper-v1", "strict-v1")
DEFAULT_PROMPT = "paper-v1"
PROMPT_VERSION = DEFAULT_PROMPT  # kept for callers that key caches on it

FIX_USER = """Your reply could not be used: {error}
Reply again with JSON only, exactly in the form asked for."""

# The seed's filter prompts (same source): told, the class name stands in the
# question; blind, the model is told the object is unknown and to guess.
ANSWER_TOLD = """Answer the multiple-choice question below.
{question}
{options}
Output only one character A/B/C/D."""
ANSWER_BLIND = """Answer the multiple-choice question below.
{question}
{options}
The question mentions "this object". However, we don't know what the object is. Try your best to guess the answer without knowing the object.
Output only one character A/B/C/D."""


def name_in_place(question: str, name: str) -> str:
    """The question with the class name where it says "this object" (the seed's
    step 1): "This object" -> capitalised name, "these objects" -> name + "s".

    >>> name_in_place("Where does this object live? This object is shy.", "tench")
    'Where does tench live? Tench is shy.'
    >>> name_in_place("Are these objects edible?", "fig")
    'Are figs edible?'
    """
    out = re.sub(r"\bthis object\b", name, question)
    out = re.sub(r"\bThis object\b", name[:1].upper() + name[1:], out)
    return re.sub(r"\b[Tt]hese objects\b", name + "s", out)


class LLMResponseError(VlmrobustError):
    """A reply that is not the JSON the prompt asked for."""


def generation_messages(k: ClassKnowledge, article: str, n: int,
                        prompt: str = DEFAULT_PROMPT) -> list[dict[str, str]]:
    if prompt not in PROMPTS:
        raise ValueError(f"unknown generation prompt {prompt!r}; known: {PROMPTS}")
    text = article.strip()[:MAX_ARTICLE_CHARS]
    if prompt == "paper-v1":
        articles = f"{RULE}\n\nArticle 1: {text}\n\n{RULE}"
        return [{"role": "user", "content": PAPER_V1.format(n=n, name=k.name,
                                                            articles=articles)}]
    synonyms = ", ".join(f'"{s}"' for s in k.names[1:]) or "none"
    user = STRICT_V1.format(name=k.name, n=n, synonyms=synonyms, article=text)
    return [{"role": "system", "content": STRICT_SYSTEM}, {"role": "user", "content": user}]


_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*)\n\s*```\s*$", re.DOTALL)


def parse_questions(reply: str, k: ClassKnowledge) -> list[Candidate]:
    """Strictly parse a generation reply. One Markdown code fence around the JSON
    is tolerated (chat models add it); anything else malformed raises
    LLMResponseError naming the class, the item and the rule broken.

    >>> from vlmrobust.builders.imagewikiqa.sources.knowledge import ClassKnowledge
    >>> k = ClassKnowledge(0, "n01440764", "tench", ("tench",), "", (), frozenset(), "",
    ...                    (), frozenset(), (), (), (), ())
    >>> r = '{"questions": [{"question": "Where is this object from?", '
    >>> r += '"choices": ["Europe", "Asia", "Africa", "Peru"], "answer": 0, "reference": "x"}]}'
    >>> parse_questions(r, k)[0].answer_text
    'Europe'
    """
    m = _FENCE.match(reply)
    text = m.group(1) if m else reply.strip()
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise LLMResponseError(f"{k.wnid} ({k.name}): reply is not valid JSON ({exc.msg} at "
                               f"char {exc.pos}): {text[:80]!r}") from None
    items: Any = data
    if isinstance(data, dict):
        # The seed's prompt does not fix the key ("questions", "quiz_questions", ...).
        lists = [v for v in data.values() if isinstance(v, list)]
        items = data.get("questions", lists[0] if len(lists) == 1 else None)
    if not isinstance(items, list) or not items:
        raise LLMResponseError(f"{k.wnid} ({k.name}): reply must be "
                               '{"questions": [...]} with at least one question')
    out: list[Candidate] = []
    for i, item in enumerate(items):
        where = f"{k.wnid} ({k.name}): question {i}"
        if not isinstance(item, dict):
            raise LLMResponseError(f"{where}: must be an object, got {type(item).__name__}")
        missing = [f for f in ("question", "choices", "answer", "reference") if f not in item]
        if missing:
            raise LLMResponseError(f"{where}: missing field(s) {missing}")
        q, choices, ans, ref = item["question"], item["choices"], item["answer"], item["reference"]
        if not isinstance(q, str) or not q.strip():
            raise LLMResponseError(f"{where}: 'question' must be a non-empty string")
        if (not isinstance(choices, list) or len(choices) != N_CHOICES
                or not all(isinstance(c, str) and c.strip() for c in choices)):
            raise LLMResponseError(f"{where}: 'choices' must be {N_CHOICES} non-empty strings")
        if isinstance(ans, str) and len(ans.strip()) == 1 and ans.strip().upper() in LETTERS:
            ans = LETTERS.index(ans.strip().upper())
        if isinstance(ans, bool) or not isinstance(ans, int) or not 0 <= ans < N_CHOICES:
            raise LLMResponseError(f"{where}: 'answer' must be an index 0..{N_CHOICES - 1}, "
                                   f"got {item['answer']!r}")
        if isinstance(ref, list):
            ref = " ".join(str(r) for r in ref)
        if not isinstance(ref, str):
            raise LLMResponseError(f"{where}: 'reference' must be a string")
        try:
            out.append(Candidate(wnid=k.wnid, label=k.index, question=q.strip(),
                                 choices=tuple(c.strip() for c in choices), answer=ans,
                                 reference=ref.strip(), kind="llm"))
        except ValueError as exc:
            raise LLMResponseError(f"{where}: {exc}") from None
    return out


@dataclass(frozen=True)
class LLMGenerator:
    client: ChatClient
    questions_per_class: int = 5
    prompt: str = DEFAULT_PROMPT

    def generate(self, k: ClassKnowledge, article: str) -> list[Candidate]:
        """Ask, parse strictly, ask again on a malformed reply; the last parse
        error is raised when every attempt fails."""
        first = generation_messages(k, article, self.questions_per_class, self.prompt)
        messages = first
        last: LLMResponseError | None = None
        for _ in range(self.client.max_retries + 1):
            reply = self.client.complete(messages)
            try:
                return parse_questions(reply, k)
            except LLMResponseError as exc:
                last = exc
                # Show the model its reply and what was wrong: asking the same
                # thing again at temperature 0 would get the same reply.
                messages = [*first, {"role": "assistant", "content": reply},
                            {"role": "user", "content": FIX_USER.format(error=exc)}]
        assert last is not None
        raise LLMResponseError(f"{last} (after {self.client.max_retries + 1} attempts)")


def parse_letter(reply: str) -> int | None:
    """The option letter an answerer replied with, or None.

    >>> parse_letter("B"), parse_letter("(c) because..."), parse_letter("Answer: D"), parse_letter("?")
    (1, 2, 3, None)
    """
    m = re.search(r"(?:^|answer\s*(?:is)?\s*:?\s*)\(?([A-Da-d])\b", reply.strip(), re.IGNORECASE)
    return LETTERS.index(m.group(1).upper()) if m else None


class LLMAnswerer:
    """The filter's answerer through the same chat backend. An unusable reply
    counts as a wrong answer (-1); an endpoint failure too, and is recorded in
    ``errors`` (wnid -> message) so the build reports the class. With
    ``cache_path``, answers are appended to a JSONL file as they come and
    reused by a rerun (resume after a crash)."""

    name = "llm"

    def __init__(self, client: ChatClient, cache_path: Path | None = None,
                 progress: bool = False) -> None:
        self.client = client
        self.cache_path = cache_path
        self.progress = progress
        self.errors: dict[str, str] = {}
        self._cache: dict[str, int] = {}
        if cache_path is not None and cache_path.is_file():
            for line in cache_path.read_text(encoding="utf-8").splitlines():
                try:
                    key, value = json.loads(line)
                except (ValueError, TypeError):
                    continue  # a line cut short by a crash
                self._cache[str(key)] = int(value)

    def _key(self, q: Candidate, class_name: str | None) -> str:
        body = json.dumps([self.client.model, q.question, list(q.choices), class_name])
        return hashlib.sha256(body.encode("utf-8")).hexdigest()

    def answer(self, questions: Sequence[Candidate],
               class_names: Sequence[str | None]) -> list[int]:
        from tqdm import tqdm

        out: list[int] = []
        pairs = list(zip(questions, class_names, strict=True))
        for q, n in tqdm(pairs, desc="imagewikiqa: LLM answers", disable=not self.progress,
                         leave=False):
            key = self._key(q, n)
            if key in self._cache:
                out.append(self._cache[key])
                continue
            if q.wnid in self.errors:
                out.append(-1)
                continue
            options = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(q.choices))
            content = (ANSWER_TOLD.format(question=name_in_place(q.question, n), options=options)
                       if n else ANSWER_BLIND.format(question=q.question, options=options))
            try:
                reply = self.client.complete([{"role": "user", "content": content}])
            except VlmrobustError as exc:
                self.errors[q.wnid] = f"filter: {exc}"
                out.append(-1)
                continue
            letter = parse_letter(reply)
            value = -1 if letter is None else letter
            out.append(value)
            self._cache[key] = value
            if self.cache_path is not None:
                self.cache_path.parent.mkdir(parents=True, exist_ok=True)
                with self.cache_path.open("a", encoding="utf-8") as f:
                    f.write(json.dumps([key, value]) + "\n")
        return out
