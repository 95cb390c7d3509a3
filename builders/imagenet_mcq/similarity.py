"""Wu-Palmer similarity between ImageNet classes over the WordNet 3.0 noun
hierarchy, precomputed per label space.

Why Wu-Palmer: ``wup(a, b) = 2·depth(lcs) / (len(a) + len(b))`` with len(x) the
depth of x through the least common subsumer. It is bounded in (0, 1] and
normalised by depth, so fine-grained siblings deep in the hierarchy (two
terrier breeds, whose subsumer is very specific) score higher than siblings
under a shallow, generic subsumer (two artefacts under "instrumentality").
Path similarity and Leacock-Chodorow depend only on the path length between
the two classes and rate both pairs alike, which is the wrong ranking for
confusable distractors. The ImageNet classes are all nouns under
``entity.n.01``, so no simulated root is needed.

The least common subsumer is the common hypernym of greatest *maximum* depth
(nltk's ``lowest_common_hypernyms`` default and Pedersen's WordNet::Similarity).
nltk's ``wup_similarity`` instead keeps NLTK2's min-depth choice, which picks
``canine`` over ``dog`` for two dog breeds (``dog`` is also a shallow
``domestic_animal``) and so ranks hyena above Dalmatian for Golden Retriever.
``use_min_depth=True`` reproduces nltk's ``wup_similarity`` exactly; both modes
are tested against nltk. This re-implementation precomputes ancestor tables:
nltk runs a breadth-first search per call, minutes for 1000 x 1000 pairs;
``row`` computes a whole row at once from a class x ancestor distance matrix
(the same formula as ``wup``, which stays as the pairwise reference).

Ties. Wu-Palmer takes few values: for 837 of the 1,000 ImageNet classes the
top-10 cutoff of a ranking falls inside a group of equally similar classes
(``thimble``: 37 classes tied at 0.824 for 6 places). Breaking ties by class
index let the lowest indices always win (backpack, barrel, bathtub, ...).
``LabelSpaceSimilarity.ranking(label, tie_seed)`` breaks ties by a seeded hash
of each class's synset name, drawn per question (the builder derives
``tie_seed`` from the spec seed, the variant and the item): within a tie group
every class is equally likely to make the cut, and the order depends on no
class index or position, so relabelling or reordering the classes changes no
question's distractors.
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np

_FAR = 1 << 40


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser: a well-spread 64-bit hash of each uint64."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


class WupTable:
    """Ancestor tables of a set of synsets; ``row(i, js)`` gives wup(i, j) for all js.

    ``synsets`` are nltk ``Synset`` objects (anything with ``hypernyms()``,
    ``instance_hypernyms()``, ``min_depth()``, ``max_depth()`` and ``name()``).
    """

    def __init__(self, synsets: Sequence[Any], use_min_depth: bool = False) -> None:
        self.n = len(synsets)
        self.use_min_depth = use_min_depth
        self._ancestors: list[dict[Any, int]] = [self._distances(s) for s in synsets]
        self._synsets = list(synsets)
        nodes = {a for anc in self._ancestors for a in anc}
        self._min_depth = {a: a.min_depth() for a in nodes}
        self._max_depth = {a: a.max_depth() for a in nodes}
        self._names = {a: a.name() for a in nodes}
        self._anc_of_node: dict[Any, dict[Any, int]] = {}
        # dist[c, k]: hypernym edges from synset c up to node k (_FAR: not an ancestor)
        self._nodes = sorted(nodes, key=lambda a: self._names[a])
        self._col = {a: k for k, a in enumerate(self._nodes)}
        self._dist = np.full((self.n, len(self._nodes)), _FAR, dtype=np.int64)
        for c, anc in enumerate(self._ancestors):
            for a, d in anc.items():
                self._dist[c, self._col[a]] = d
        self._to_node: dict[Any, np.ndarray] = {}

    @staticmethod
    def _distances(synset: Any) -> dict[Any, int]:
        # shortest number of hypernym (or instance-hypernym) edges to each ancestor,
        # the synset itself at 0: what nltk's _shortest_hypernym_paths computes
        out: dict[Any, int] = {}
        queue = deque([(synset, 0)])
        while queue:
            s, d = queue.popleft()
            if s in out:
                continue
            out[s] = d
            queue.extend((h, d + 1) for h in s.hypernyms())
            queue.extend((h, d + 1) for h in s.instance_hypernyms())
        return out

    def _node_ancestors(self, node: Any) -> dict[Any, int]:
        if node not in self._anc_of_node:
            self._anc_of_node[node] = self._distances(node)
        return self._anc_of_node[node]

    @staticmethod
    def _path(a: dict[Any, int], b: dict[Any, int]) -> int:
        return min(da + b[s] for s, da in a.items() if s in b)

    def wup(self, i: int, j: int) -> float:
        """Wu-Palmer similarity of synsets i and j (nltk's conventions)."""
        ai, aj = self._ancestors[i], self._ancestors[j]
        common = [s for s in ai if s in aj]
        if not common:
            return 0.0
        # deepest common hypernyms (by max_depth, or min_depth as nltk's wup does),
        # then synset i itself if it is among them, else the first by name
        depth_of = self._min_depth if self.use_min_depth else self._max_depth
        best = max(depth_of[s] for s in common)
        subsumers = [s for s in common if depth_of[s] == best]
        me = self._synsets[i]
        sub = me if me in subsumers else min(subsumers, key=lambda s: self._names[s])
        depth = self._max_depth[sub] + 1
        anc_sub = self._node_ancestors(sub)
        len1 = self._path(ai, anc_sub) + depth
        len2 = self._path(aj, anc_sub) + depth
        return 2.0 * depth / (len1 + len2)

    def _path_to(self, node: Any) -> np.ndarray:
        """For every synset c: ``_path(ancestors(c), ancestors(node))``, the
        shortest c -> common ancestor <- node path (what ``wup`` computes per pair)."""
        if node not in self._to_node:
            anc = self._node_ancestors(node)
            cols = [self._col[a] for a in anc]
            up = np.array([anc[a] for a in anc], dtype=np.int64)
            self._to_node[node] = (self._dist[:, cols] + up).min(axis=1)
        return self._to_node[node]

    def row(self, i: int, js: Sequence[int]) -> np.ndarray:
        """wup(i, j) for every j of ``js``, equal to ``wup`` pair by pair."""
        js_arr = np.asarray(list(js), dtype=np.int64)
        depth_of = self._min_depth if self.use_min_depth else self._max_depth
        me = self._synsets[i]
        # i's ancestors in subsumer order: deepest first, then i itself, then by name;
        # a pair's subsumer is the first of them that is also an ancestor of j
        cands = sorted(self._ancestors[i],
                       key=lambda a: (-depth_of[a], a is not me, self._names[a]))
        shared = self._dist[:, [self._col[a] for a in cands]][js_arr] < _FAR
        first = shared.argmax(axis=1)
        out = np.zeros(js_arr.size, dtype=np.float64)
        for k in np.unique(first[shared.any(axis=1)]).tolist():
            sub = cands[k]
            sel = np.flatnonzero((first == k) & shared[:, k])
            depth = self._max_depth[sub] + 1
            path = self._path_to(sub)
            len1 = path[i] + depth
            len2 = path[js_arr[sel]] + depth
            out[sel] = 2.0 * depth / (len1 + len2)
        return out


class LabelSpaceSimilarity:
    """Wu-Palmer rankings within one label space (IN-1k indices), computed lazily
    per true class and cached: a build only needs the rows of classes that occur."""

    def __init__(self, space: Sequence[int], synsets_by_class: dict[int, Any]) -> None:
        self.space = tuple(space)
        missing = [c for c in self.space if c not in synsets_by_class]
        if missing:
            raise ValueError(f"no WordNet synset for classes {missing[:5]}")
        self._pos = {c: i for i, c in enumerate(self.space)}
        synsets = [synsets_by_class[c] for c in self.space]
        self._table = WupTable(synsets)
        self._rows: dict[int, np.ndarray] = {}
        # what a tie is broken by: the class's synset name, never its index or position
        self._names = np.array([s.name() for s in synsets])
        self._name_hash = np.array(
            [int.from_bytes(hashlib.sha256(n.encode("utf-8")).digest()[:8], "big")
             for n in self._names], dtype=np.uint64)

    def similarities(self, label: int) -> np.ndarray:
        """wup(label, c) for every c in the label space, in label-space order."""
        if label not in self._rows:
            i = self._pos[label]
            self._rows[label] = self._table.row(i, range(len(self.space)))
        return self._rows[label]

    def similarity(self, a: int, b: int) -> float:
        return float(self.similarities(a)[self._pos[b]])

    def ranking(self, label: int, tie_seed: int = 0) -> tuple[int, ...]:
        """Classes of the space other than ``label``, most similar first; equally
        similar classes in the order of a hash of (``tie_seed``, synset name), so
        a per-question ``tie_seed`` gives every class of a tie group the same
        chance of a place above a cutoff, whatever the classes' indices."""
        sims = self.similarities(label)
        tie = _mix64(self._name_hash ^ np.uint64(tie_seed % (1 << 64)))
        order = np.lexsort((self._names, tie, -sims))  # last key first
        space = self.space
        return tuple(space[k] for k in order.tolist() if space[k] != label)
