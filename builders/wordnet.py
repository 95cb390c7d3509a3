"""WordNet 3.0 offline: nltk's reader on Debian's ``wordnet-base`` dict files.

nltk looks for ``corpora/wordnet/`` under a directory of ``nltk.data.path`` and
needs a ``lexnames`` file that Debian does not ship, so ``--install`` builds that
directory from copies of ``/usr/share/wordnet`` (~36 MB) plus a generated
``lexnames``. Links do not work: nltk's path hardening refuses symlinks that
escape the corpus root and multiply-linked (hard-linked) files.
ImageNet wnids are WordNet 3.0 noun offsets (``n02084071`` -> offset 2084071).

Install (idempotent)::

    apt-get install wordnet-base wordnet-sense-index
    python -m vlmrobust.builders.wordnet --install            # -> $NLTK_DATA or ~/nltk_data
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import shutil
import sys
import warnings
from pathlib import Path
from typing import Any

from vlmrobust.core.errors import VlmrobustError
from vlmrobust.core.files.atomic import write_text_atomic

DEBIAN_WORDNET_DIR = Path("/usr/share/wordnet")

# The 45 lexicographer files of WordNet 3.0 in file-number order (the ``lexnames``
# file of the Princeton distribution: number, name, syntactic category).
LEXNAMES: tuple[tuple[str, int], ...] = (
    ("adj.all", 3), ("adj.pert", 3), ("adv.all", 4), ("noun.Tops", 1),
    ("noun.act", 1), ("noun.animal", 1), ("noun.artifact", 1), ("noun.attribute", 1),
    ("noun.body", 1), ("noun.cognition", 1), ("noun.communication", 1), ("noun.event", 1),
    ("noun.feeling", 1), ("noun.food", 1), ("noun.group", 1), ("noun.location", 1),
    ("noun.motive", 1), ("noun.object", 1), ("noun.person", 1), ("noun.phenomenon", 1),
    ("noun.plant", 1), ("noun.possession", 1), ("noun.process", 1), ("noun.quantity", 1),
    ("noun.relation", 1), ("noun.shape", 1), ("noun.state", 1), ("noun.substance", 1),
    ("noun.time", 1), ("verb.body", 2), ("verb.change", 2), ("verb.cognition", 2),
    ("verb.communication", 2), ("verb.competition", 2), ("verb.consumption", 2),
    ("verb.contact", 2), ("verb.creation", 2), ("verb.emotion", 2), ("verb.motion", 2),
    ("verb.perception", 2), ("verb.possession", 2), ("verb.social", 2), ("verb.stative", 2),
    ("verb.weather", 2), ("adj.ppl", 3),
)

# Files nltk's WordNetCorpusReader opens; the first group must exist.
REQUIRED_FILES = (
    "index.noun", "index.verb", "index.adj", "index.adv",
    "data.noun", "data.verb", "data.adj", "data.adv",
    "noun.exc", "verb.exc", "adj.exc", "adv.exc",
    # Debian ships it apart (wordnet-sense-index); lemma_from_key, synset_from_sense_key
    # and the sense-key lookups need it.
    "index.sense",
)
OPTIONAL_FILES = ("cntlist.rev", "cntlist", "frames.vrb", "sents.vrb", "sentidx.vrb")

INSTALL_HINT = (
    "install it offline with `apt-get install wordnet-base wordnet-sense-index && "
    "python -m vlmrobust.builders.wordnet --install`, or online with "
    "`python -c \"import nltk; nltk.download('wordnet')\"`"
)

_WNID = re.compile(r"^n(\d{8})$")


def lexnames_text() -> str:
    """The ``lexnames`` file content: ``NN<TAB>name<TAB>category`` per line.

    >>> lexnames_text().splitlines()[5]
    '05\\tnoun.animal\\t1'
    """
    return "".join(f"{i:02d}\t{name}\t{cat}\n" for i, (name, cat) in enumerate(LEXNAMES))


def default_install_dir() -> Path:
    """``$NLTK_DATA`` (first entry) or ``~/nltk_data``: both are on ``nltk.data.path``."""
    env = os.environ.get("NLTK_DATA", "").split(os.pathsep)[0]
    return Path(env) if env else Path.home() / "nltk_data"


def install(data_dir: Path | None = None, source: Path = DEBIAN_WORDNET_DIR) -> Path:
    """Create ``<data_dir>/corpora/wordnet`` from the Debian dict files; idempotent.

    Returns the corpus directory. Files already there with the right size are kept
    (so a corpus from ``nltk.download`` stays as it is).
    """
    data_dir = Path(data_dir) if data_dir is not None else default_install_dir()
    source = Path(source)
    missing = [f for f in REQUIRED_FILES if not (source / f).is_file()]
    if missing:
        raise VlmrobustError(
            f"{source}: WordNet dict files missing ({', '.join(missing[:3])}); "
            "fix: apt-get install wordnet-base wordnet-sense-index"
        )
    corpus = data_dir / "corpora" / "wordnet"
    corpus.mkdir(parents=True, exist_ok=True)
    for name in REQUIRED_FILES + OPTIONAL_FILES:
        src, dst = source / name, corpus / name
        if not src.is_file():
            continue
        if (
            dst.is_file()
            and not dst.is_symlink()
            and dst.stat().st_nlink == 1
            and dst.stat().st_size == src.stat().st_size
        ):
            continue
        _place(src, dst)
    if not (corpus / "lexnames").is_file() or (corpus / "lexnames").read_text() != lexnames_text():
        write_text_atomic(corpus / "lexnames", lexnames_text())
        (corpus / "lexnames").chmod(0o644)
    return corpus


def _place(src: Path, dst: Path) -> None:
    """Copy ``src`` to ``dst`` atomically (a killed install leaves no half file)."""
    tmp = dst.with_name(f".{dst.name}.tmp-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def find_corpus() -> Path | None:
    """The ``corpora/wordnet`` directory nltk would use, or None if absent/incomplete."""
    import nltk

    for base in nltk.data.path:
        corpus = Path(base) / "corpora" / "wordnet"
        if all((corpus / f).is_file() for f in (*REQUIRED_FILES, "lexnames")):
            return corpus
    return None


_SEQUENTIAL_FILES = frozenset(
    {"lexnames", "index.noun", "index.verb", "index.adj", "index.adv",
     "noun.exc", "verb.exc", "adj.exc", "adv.exc"}
)


def _reader_class() -> Any:
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class OfflineWordNet(WordNetCorpusReader):
        def open(self, file: str) -> Any:
            # The files nltk reads once, front to back, at load time go through a plain
            # file object: nltk's seekable stream reader makes loading ~2x slower. Files
            # it seeks in (data.*, index.sense, cntlist.rev) keep nltk's reader.
            if file in _SEQUENTIAL_FILES:
                return open(os.path.join(str(self.root), file), encoding="utf-8")
            return super().open(file)

        def map_wn(self, version: str = "wordnet") -> Any:
            # nltk maps the "wordnet" corpus onto the loaded one for OMW lookups by
            # reading index.sense twice (~half the load time); here both are the same
            # WordNet 3.0 and there is no OMW, so the map is the identity (None).
            return None

    return OfflineWordNet


@functools.lru_cache(maxsize=1)
def get_wordnet() -> Any:
    """nltk's WordNet 3.0 reader; VlmrobustError with the install command if absent."""
    corpus = find_corpus()
    if corpus is None:
        raise VlmrobustError(f"WordNet 3.0 corpus not found on nltk.data.path; {INSTALL_HINT}")
    with warnings.catch_warnings():
        # No Open Multilingual WordNet offline: English is all we need.
        warnings.simplefilter("ignore")
        reader = _reader_class()(str(corpus), None)
    version = reader.get_version()
    if version != "3.0":
        raise VlmrobustError(
            f"{corpus}: WordNet {version} found but ImageNet wnids are WordNet 3.0 offsets; {INSTALL_HINT}"
        )
    return reader


def synset_for_wnid(wnid: str) -> Any:
    """The noun synset of an ImageNet wnid (``n`` + 8-digit WordNet 3.0 offset)."""
    m = _WNID.match(wnid)
    if m is None:
        raise VlmrobustError(f"{wnid!r} is not a wnid; fix: use 'n' + 8 digits, e.g. n01440764")
    wn = get_wordnet()
    offset = int(m.group(1))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # nltk warns and returns None on a bad offset
            syn = wn.synset_from_pos_and_offset("n", offset)
    except Exception as exc:  # nltk raises WordNetError / ValueError on some bad offsets
        syn, why = None, f" ({exc})"
    else:
        why = ""
    if syn is None or syn.offset() != offset:
        raise VlmrobustError(f"{wnid}: no WordNet 3.0 noun synset at this offset{why}; fix: check the wnid")
    return syn


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m vlmrobust.builders.wordnet", description=__doc__.split("\n")[0])
    parser.add_argument("--install", action="store_true", help="create corpora/wordnet from Debian's wordnet-base")
    parser.add_argument("--data-dir", type=Path, default=None, help="nltk data dir (default: $NLTK_DATA or ~/nltk_data)")
    parser.add_argument("--source", type=Path, default=DEBIAN_WORDNET_DIR, help="WordNet dict dir")
    parser.add_argument("--check", action="store_true", help="load the reader and print dog's lemmas")
    args = parser.parse_args(argv)
    try:
        if args.install:
            print(install(args.data_dir, args.source))
        if args.check or not args.install:
            print(", ".join(synset_for_wnid("n02084071").lemma_names()))
    except VlmrobustError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
