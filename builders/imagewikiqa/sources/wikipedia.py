"""Wikipedia as the text source: a Hugging Face ``wikimedia/wikipedia`` parquet
snapshot (columns ``id``, ``url``, ``title``, ``text``; one file or a folder of
files such as ``20231101.en/``) or a folder of pages (``<Title>.txt`` / ``.md``,
or ``<wnid>.txt`` to pin a class to a page, optionally with a front matter of
``title:``, ``url:``, ``revision:`` lines between ``---`` lines).

Each ImageNet class is mapped to one article: candidate titles are its lemmas
(WordNet lemmas and the class name) as written or with a parenthesised
qualifier ("Crane (bird)"); disambiguation pages are skipped; the candidate
whose opening best matches the class's WordNet gloss and hypernyms wins (a
qualifier naming a hypernym counts most). Every question records the article
title and the revision (a page's ``revision:``, else the snapshot name)."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from vlmrobust.builders.imagewikiqa.sources.knowledge import ClassKnowledge
from vlmrobust.core.errors import SourceError

COLUMNS = ("id", "url", "title", "text")
PAGE_SUFFIXES = (".txt", ".md", ".wiki")
MAX_PAGE_BYTES = 4_000_000       # one page file; a real article is far below this
MAX_ARTICLE_CHARS = 200_000      # text kept per article
HEAD_CHARS = 3000                # the opening the gloss is matched against
_STOP = frozenset([
    "a", "an", "the", "of", "to", "for", "and", "or", "in", "on", "with", "by", "as", "at",
    "from", "its", "it", "is", "are", "be", "that", "which", "this", "these", "those", "any",
    "used", "such", "other", "into", "than", "their", "some",
])
_DISAMBIGUATION = re.compile(r"\b(?:may|might|can) (?:also )?refer to\b", re.IGNORECASE)


@dataclass(frozen=True)
class Article:
    title: str
    text: str
    url: str = ""
    revision: str = ""   # the page's revision id, else the snapshot name

    def __post_init__(self) -> None:
        if not self.title.strip():
            raise ValueError("an article needs a title")


def title_key(title: str) -> str:
    """Case-, underscore- and space-insensitive form of a title.

    >>> title_key("Great_white  shark"), title_key("Crane (bird)")
    ('great white shark', 'crane (bird)')
    """
    return re.sub(r"\s+", " ", title.replace("_", " ")).strip().lower()


def base_key(title: str) -> str:
    """The title key without a trailing parenthesised qualifier.

    >>> base_key("Crane (bird)"), base_key("Koala")
    ('crane', 'koala')
    """
    return re.sub(r"\s*\([^)]*\)$", "", title_key(title))


def qualifier(title: str) -> str:
    """
    >>> qualifier("Crane (machine)"), qualifier("Crane")
    ('machine', '')
    """
    m = re.search(r"\(([^)]*)\)\s*$", title)
    return m.group(1).strip().lower() if m else ""


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if len(w) > 2 and w not in _STOP}


def is_disambiguation(article: Article) -> bool:
    return (qualifier(article.title) == "disambiguation"
            or bool(_DISAMBIGUATION.search(article.text[:400])))


def class_keys(k: ClassKnowledge) -> set[str]:
    """Title keys that may name the class's article (its lemmas, as written)."""
    return {base_key(n) for n in k.names if n.strip()}


def match_score(k: ClassKnowledge, article: Article) -> float:
    """How well an article's opening fits the class: the share of gloss words it
    uses, half the share of hypernym words, +1 when the title's qualifier names
    a hypernym or gloss word ("Crane (bird)" for a bird), +0.1 for the class's
    own name as the title. Disambiguation pages score -1."""
    if is_disambiguation(article):
        return -1.0
    head = _words(article.text[:HEAD_CHARS])
    gloss = _words(k.gloss)
    hyper = set()
    for name in k.path[-6:-1]:
        hyper |= _words(name.split(".")[0].replace("_", " "))
    hyper |= _words(k.hypernym)
    score = len(gloss & head) / max(len(gloss), 1) + 0.5 * len(hyper & head) / max(len(hyper), 1)
    qual = _words(qualifier(article.title))
    if qual and qual & (hyper | gloss):
        score += 1.0
    if base_key(article.title) == base_key(k.name):
        score += 0.1
    return score


def pick_article(k: ClassKnowledge, candidates: Sequence[Article]) -> Article | None:
    """The best-fitting candidate, or None when none shares a gloss or hypernym
    word with the class (a homonym is worse than no article)."""
    scored = sorted(((match_score(k, a), a.title, a) for a in candidates
                     if base_key(a.title) in class_keys(k)), key=lambda t: (-t[0], t[1]))
    if not scored or scored[0][0] <= 0.1 + 1e-9:
        return None
    return scored[0][2]


# --- readers --------------------------------------------------------------------------------

def _parquet_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(path.glob("*.parquet")) + sorted(path.glob("*/*.parquet"))
    if not files:
        raise SourceError(f"{path}: no .parquet files; fix: point text_source.path at a "
                          "wikimedia/wikipedia snapshot folder (e.g. 20231101.en/) or file")
    return files


def _check_schema(file: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(file)
    except (OSError, pa.ArrowInvalid) as exc:
        raise SourceError(f"{file}: not a readable parquet file ({exc}); fix: re-download "
                          "the snapshot file") from None
    missing = [c for c in COLUMNS if c not in schema.names]
    wrong = [c for c in COLUMNS if c in schema.names
             and not (pa.types.is_string(schema.field(c).type)
                      or pa.types.is_large_string(schema.field(c).type))]
    if missing or wrong:
        raise SourceError(f"{file}: not the wikimedia/wikipedia schema (missing {missing}, "
                          f"not strings {wrong}; has {schema.names}); fix: use a snapshot with "
                          "string columns id, url, title, text")


def read_parquet_articles(path: Path, keys: Iterable[str], snapshot: str) -> list[Article]:
    """Articles whose base title key is one of ``keys``: titles are scanned column
    by column in batches, then only the matching rows' text is read."""
    import pyarrow.parquet as pq

    wanted = set(keys)
    out: list[Article] = []
    for file in _parquet_files(path):
        _check_schema(file)
        pf = pq.ParquetFile(file)
        titles: set[str] = set()
        for batch in pf.iter_batches(columns=["title"], batch_size=65536):
            for t in batch.column(0).to_pylist():
                if t is not None and base_key(t) in wanted:
                    titles.add(t)
        if not titles:
            continue
        table = pq.read_table(file, columns=list(COLUMNS),
                              filters=[("title", "in", sorted(titles))])
        for row in table.to_pylist():
            if not row["title"] or row["text"] is None:
                continue
            out.append(Article(title=row["title"], text=row["text"][:MAX_ARTICLE_CHARS],
                               url=row["url"] or "", revision=snapshot))
    return out


def _front_matter(text: str) -> tuple[dict[str, str], str]:
    """(fields, body) of a page that may open with ``---`` / ``key: value`` / ``---``.

    >>> _front_matter("---\\ntitle: Koala\\nrevision: 123\\n---\\nThe koala is ...")
    ({'title': 'Koala', 'revision': '123'}, 'The koala is ...')
    >>> _front_matter("No header.")
    ({}, 'No header.')
    """
    m = re.match(r"---\s*\n(.*?)\n---\s*\n", text, re.DOTALL)
    if not m:
        return {}, text
    fields = {}
    for line in m.group(1).splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields[key.strip().lower()] = value.strip()
    return fields, text[m.end():]


def read_page(file: Path, snapshot: str) -> Article:
    size = file.stat().st_size
    if size > MAX_PAGE_BYTES:
        raise SourceError(f"{file}: {size} bytes is more than one article "
                          f"({MAX_PAGE_BYTES} at most); fix: save only the class's article")
    try:
        raw = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SourceError(f"{file}: not UTF-8 text ({exc.reason}); fix: re-save it as UTF-8"
                          ) from None
    fields, body = _front_matter(raw)
    title = fields.get("title") or file.stem.replace("_", " ")
    if len(body.split()) < 20:
        raise SourceError(f"{file}: only {len(body.split())} words; fix: save the full article")
    return Article(title=title, text=body[:MAX_ARTICLE_CHARS], url=fields.get("url", ""),
                   revision=fields.get("revision") or snapshot)


@dataclass(frozen=True)
class WikipediaSource:
    """A snapshot (parquet) or a folder of pages; ``snapshot`` names it in every row."""

    path: Path
    snapshot: str

    @property
    def is_parquet(self) -> bool:
        return self.path.suffix == ".parquet" or (
            self.path.is_dir() and not any(p.suffix in PAGE_SUFFIXES
                                           for p in self.path.iterdir()))

    def map_classes(self, classes: Sequence[ClassKnowledge]
                    ) -> tuple[dict[str, Article], dict[str, str]]:
        """(wnid -> article, wnid -> why none) for ``classes``."""
        if not self.path.exists():
            raise SourceError(f"text_source.path {self.path} does not exist; fix: point it at "
                              "a wikimedia/wikipedia parquet snapshot or a folder of pages")
        pinned: dict[str, Article] = {}
        pool: list[Article] = []
        keys = set().union(*(class_keys(k) for k in classes)) if classes else set()
        if self.is_parquet:
            pool = read_parquet_articles(self.path, keys, self.snapshot)
        else:
            wnids = {k.wnid for k in classes}
            for file in sorted(self.path.iterdir()):
                if file.suffix not in PAGE_SUFFIXES or not file.is_file():
                    continue
                if file.stem in wnids:
                    pinned[file.stem] = read_page(file, self.snapshot)
                elif base_key(file.stem) in keys:
                    pool.append(read_page(file, self.snapshot))
                else:
                    # A page titled in its front matter only: read its header cheaply.
                    with file.open("r", encoding="utf-8", errors="replace") as f:
                        head = f.read(2048)
                    fields, _ = _front_matter(head)
                    if "title" in fields and base_key(fields["title"]) in keys:
                        pool.append(read_page(file, self.snapshot))
        found: dict[str, Article] = {}
        missing: dict[str, str] = {}
        for k in classes:
            if k.wnid in pinned:
                page = pinned[k.wnid]
                if page.title == k.wnid:  # no front-matter title: the class's own name
                    page = dataclasses.replace(page, title=k.name)
                found[k.wnid] = page
                continue
            art = pick_article(k, pool)
            if art is None:
                names = ", ".join(sorted(class_keys(k)))
                missing[k.wnid] = (f"{self.path}: no Wikipedia article for class {k.wnid} "
                                   f"(titles tried: {names}); fix: add the page "
                                   f"(or {k.wnid}.txt to pin it)")
            else:
                found[k.wnid] = art
        return found, missing


def articles_fingerprint(found: Mapping[str, Article]) -> str:
    """sha256 over (wnid, title, revision, text) of the articles used: a snapshot
    of many GB is not hashed whole, and only these articles reach the dataset."""
    import hashlib

    h = hashlib.sha256()
    for wnid in sorted(found):
        a = found[wnid]
        h.update("\x1f".join([wnid, a.title, a.revision,
                              hashlib.sha256(a.text.encode("utf-8")).hexdigest()]).encode())
        h.update(b"\n")
    return h.hexdigest()
