"""The 16 entry-level categories of Geirhos et al.'s cue-conflict stimuli and the
ImageNet-1k classes each stands for, as model-vs-human decides them: a
classifier's vote for a category is the mean of the softmax probabilities of its
classes (``group_rule="mean-prob"``), the decision the argmax over the 16.

The class lists are model-vs-human's ``HumanCategories.<category>_indices``
(modelvshuman/helper/human_categories.py): WordNet hyponyms of each category
among the ILSVRC-2012 classes, with the classes its authors judged ambiguous
left out: 8 dog breeds, and a single class for some categories (airplane is
404 'airliner', knife 499 'cleaver', oven 766 'rotisserie'). Kept as published,
because shape-bias numbers compare with model-vs-human's only under the same
mapping; tests/builders/cue_conflict/test_cue_conflict_categories.py compares this table with their
published lists.
"""

from __future__ import annotations

from vlmrobust.core.label_space import ClassEntry, LabelSpace

LABEL_SPACE_NAME = "model-vs-human-16"

#: category -> ImageNet-1k indices (ascending); categories in sorted order,
#: which is model-vs-human's order (``get_human_object_recognition_categories``).
CATEGORY_CLASSES: dict[str, tuple[int, ...]] = {
    "airplane": (404,),
    "bear": (294, 295, 296, 297),
    "bicycle": (444, 671),
    "bird": (8, 10, 11, 12, 13, 14, 15, 16, 18, 19, 20, 22, 23, 24,
             *range(80, 84), *range(87, 97), 98, 99, 100,
             *range(127, 134), *range(135, 146)),
    "boat": (472, 554, 625, 814, 914),
    "bottle": (440, 720, 737, 898, 899, 901, 907),
    "car": (436, 511, 817),
    "cat": tuple(range(281, 287)),
    "chair": (423, 559, 765, 857),
    "clock": (409, 530, 892),
    # the dog breeds 152..268 without 192, 204, 227, 242, 251, 258, 260 and 264
    "dog": tuple(i for i in range(152, 269)
                 if i not in {192, 204, 227, 242, 251, 258, 260, 264}),
    "elephant": (385, 386),
    "keyboard": (508, 878),
    "knife": (499,),
    "oven": (766,),
    "truck": (555, 569, 656, 675, 717, 734, 864, 867),
}
CATEGORIES: tuple[str, ...] = tuple(sorted(CATEGORY_CLASSES))

# Other words a text answer may use for a category (matched like class names).
_SYNONYMS: dict[str, tuple[str, ...]] = {
    "airplane": ("aeroplane", "plane"),
    "bicycle": ("bike",),
    "car": ("automobile",),
    "truck": ("lorry",),
}


def label_space() -> LabelSpace:
    """The 16-category label space every cue-conflict config indexes.

    >>> ls = label_space()
    >>> len(ls), ls.names[:3], ls.group_rule
    (16, ('airplane', 'bear', 'bicycle'), 'mean-prob')
    """
    return LabelSpace(LABEL_SPACE_NAME,
                      tuple(ClassEntry(c, _SYNONYMS.get(c, ()), None, CATEGORY_CLASSES[c])
                            for c in CATEGORIES),
                      group_rule="mean-prob")
