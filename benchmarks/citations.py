"""The papers each benchmark family builds on, as BibTeX: shown on the
leaderboard's About page and written into every dataset card's ``citation``.
Plain data (no imports beyond the standard library) so every layer can use it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Citation:
    key: str
    title: str
    url: str
    families: tuple[str, ...]  # benchmark families that build on it ("*" = all)
    bibtex: str

    def __post_init__(self) -> None:
        if not self.bibtex.lstrip().startswith("@") or f"{{{self.key}," not in self.bibtex:
            raise ValueError(f"citation {self.key}: BibTeX must start with @type{{{self.key},")


CITATIONS: tuple[Citation, ...] = (
    Citation(
        "vlm_robustness_language_2025",
        "Does Language Training Improve Vision-Language Model Robustness?",
        "https://leo1oel.github.io/blog/2025-07/vlm-robustness", ("imagenet-mcq",),
        # The page names no author (only the site's handle), so the entry has
        # none rather than a handle posing as a name.
        "@misc{vlm_robustness_language_2025,\n"
        "  title = {Does Language Training Improve Vision-Language Model Robustness?},\n"
        "  year = {2025},\n"
        "  month = jul,\n"
        "  howpublished = {\\url{https://leo1oel.github.io/blog/2025-07/vlm-robustness}},\n"
        "  note = {Blog post; the page names no author}\n}"),
    Citation(
        "taori2020measuring",
        "Measuring Robustness to Natural Distribution Shifts in Image Classification",
        "https://arxiv.org/abs/2007.00644", ("imagenet-mcq",),
        "@inproceedings{taori2020measuring,\n"
        "  title = {Measuring Robustness to Natural Distribution Shifts in Image "
        "Classification},\n"
        "  author = {Taori, Rohan and Dave, Achal and Shankar, Vaishaal and Carlini, Nicholas"
        " and Recht, Benjamin and Schmidt, Ludwig},\n"
        "  booktitle = {Advances in Neural Information Processing Systems},\n"
        "  year = {2020}\n}"),
    Citation(
        "miller2021accuracy",
        "Accuracy on the Line: On the Strong Correlation Between Out-of-Distribution and "
        "In-Distribution Generalization",
        "https://arxiv.org/abs/2107.04649", ("imagenet-mcq",),
        "@inproceedings{miller2021accuracy,\n"
        "  title = {Accuracy on the Line: On the Strong Correlation Between "
        "Out-of-Distribution and In-Distribution Generalization},\n"
        "  author = {Miller, John and Taori, Rohan and Raghunathan, Aditi and Sagawa, Shiori"
        " and Koh, Pang Wei and Shankar, Vaishaal and Liang, Percy and Carmon, Yair and "
        "Schmidt, Ludwig},\n"
        "  booktitle = {International Conference on Machine Learning},\n"
        "  year = {2021}\n}"),
    Citation(
        "sui2025benchc",
        "Benchmarking Corruption Robustness of LVLMs: A Discriminative Benchmark and "
        "Robustness Alignment Metric",
        "https://arxiv.org/abs/2511.19032", ("bench-c",),
        "@article{sui2025benchc,\n"
        "  title = {Benchmarking Corruption Robustness of {LVLMs}: A Discriminative Benchmark"
        " and Robustness Alignment Metric},\n"
        "  author = {Sui, Xiangjie and Li, Songyang and Zhu, Hanwei and Chen, Baoliang and "
        "Fang, Yuming and Sun, Xin},\n"
        "  journal = {arXiv preprint arXiv:2511.19032},\n"
        "  year = {2025}\n}"),
    Citation(
        "hendrycks2019benchmarking",
        "Benchmarking Neural Network Robustness to Common Corruptions and Perturbations",
        "https://arxiv.org/abs/1903.12261", ("bench-c",),
        "@inproceedings{hendrycks2019benchmarking,\n"
        "  title = {Benchmarking Neural Network Robustness to Common Corruptions and "
        "Perturbations},\n"
        "  author = {Hendrycks, Dan and Dietterich, Thomas},\n"
        "  booktitle = {International Conference on Learning Representations},\n"
        "  year = {2019}\n}"),
    Citation(
        "zhang2024why",
        "Why are Visually-Grounded Language Models Bad at Image Classification?",
        "https://arxiv.org/abs/2405.18415", ("imagewikiqa", "classification"),
        "@inproceedings{zhang2024why,\n"
        "  title = {Why are Visually-Grounded Language Models Bad at Image Classification?},\n"
        "  author = {Zhang, Yuhui and Unell, Alyssa and Wang, Xiaohan and Ghosh, Dhruba and "
        "Su, Yuchang and Schmidt, Ludwig and Yeung-Levy, Serena},\n"
        "  booktitle = {Advances in Neural Information Processing Systems},\n"
        "  year = {2024}\n}"),
    Citation(
        "tu2024holistic",
        "Toward a Holistic Evaluation of Robustness in CLIP Models",
        "https://arxiv.org/abs/2410.01534", ("classification",),
        "@article{tu2024holistic,\n"
        "  title = {Toward a Holistic Evaluation of Robustness in {CLIP} Models},\n"
        "  author = {Tu, Weijie and Deng, Weijian and Gedeon, Tom},\n"
        "  journal = {arXiv preprint arXiv:2410.01534},\n"
        "  year = {2024}\n}"),
    Citation(
        "geirhos2019imagenettrained",
        "ImageNet-trained CNNs are biased towards texture; increasing shape bias improves "
        "accuracy and robustness",
        "https://openreview.net/forum?id=Bygh9j09KX", ("cue-conflict",),
        "@inproceedings{geirhos2019imagenettrained,\n"
        "  title = {{ImageNet}-trained {CNNs} are biased towards texture; increasing shape bias "
        "improves accuracy and robustness},\n"
        "  author = {Geirhos, Robert and Rubisch, Patricia and Michaelis, Claudio and Bethge, "
        "Matthias and Wichmann, Felix A. and Brendel, Wieland},\n"
        "  booktitle = {International Conference on Learning Representations},\n"
        "  year = {2019}\n}"),
    Citation(
        "geirhos2021partial",
        "Partial success in closing the gap between human and machine vision",
        "https://arxiv.org/abs/2106.07411", ("cue-conflict",),
        "@inproceedings{geirhos2021partial,\n"
        "  title = {Partial success in closing the gap between human and machine vision},\n"
        "  author = {Geirhos, Robert and Narayanappa, Kantharaju and Mitzkus, Benjamin and "
        "Thieringer, Tizian and Bethge, Matthias and Wichmann, Felix A. and Brendel, Wieland},\n"
        "  booktitle = {Advances in Neural Information Processing Systems},\n"
        "  year = {2021}\n}"),
    Citation(
        "young2014image",
        "From image descriptions to visual denotations: New similarity metrics for semantic "
        "inference over event descriptions",
        "https://aclanthology.org/Q14-1006/", ("retrieval",),
        "@article{young2014image,\n"
        "  title = {From image descriptions to visual denotations: New similarity metrics for "
        "semantic inference over event descriptions},\n"
        "  author = {Young, Peter and Lai, Alice and Hodosh, Micah and Hockenmaier, Julia},\n"
        "  journal = {Transactions of the Association for Computational Linguistics},\n"
        "  volume = {2},\n"
        "  pages = {67--78},\n"
        "  year = {2014}\n}"),
    Citation(
        "lin2014microsoft",
        "Microsoft COCO: Common Objects in Context",
        "https://arxiv.org/abs/1405.0312", ("retrieval",),
        "@inproceedings{lin2014microsoft,\n"
        "  title = {Microsoft {COCO}: Common Objects in Context},\n"
        "  author = {Lin, Tsung-Yi and Maire, Michael and Belongie, Serge and Hays, James and "
        "Perona, Pietro and Ramanan, Deva and Doll{\\'a}r, Piotr and Zitnick, C. Lawrence},\n"
        "  booktitle = {European Conference on Computer Vision},\n"
        "  year = {2014}\n}"),
    Citation(
        "karpathy2015deep",
        "Deep Visual-Semantic Alignments for Generating Image Descriptions",
        "https://arxiv.org/abs/1412.2306", ("retrieval",),
        "@inproceedings{karpathy2015deep,\n"
        "  title = {Deep Visual-Semantic Alignments for Generating Image Descriptions},\n"
        "  author = {Karpathy, Andrej and Fei-Fei, Li},\n"
        "  booktitle = {IEEE Conference on Computer Vision and Pattern Recognition},\n"
        "  year = {2015}\n}"),
    Citation(
        "huang2021mos",
        "MOS: Towards Scaling Out-of-distribution Detection for Large Semantic Space",
        "https://arxiv.org/abs/2105.01879", ("ood",),
        "@inproceedings{huang2021mos,\n"
        "  title = {MOS: Towards Scaling Out-of-distribution Detection for Large Semantic Space},\n"
        "  author = {Huang, Rui and Li, Yixuan},\n"
        "  booktitle = {IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},\n"
        "  year = {2021}\n}"),
    Citation(
        "hendrycks2021natural",
        "Natural Adversarial Examples",
        "https://arxiv.org/abs/1907.07174", ("ood",),
        "@inproceedings{hendrycks2021natural,\n"
        "  title = {Natural Adversarial Examples},\n"
        "  author = {Hendrycks, Dan and Zhao, Kevin and Basart, Steven and Steinhardt, Jacob "
        "and Song, Dawn},\n"
        "  booktitle = {IEEE/CVF Conference on Computer Vision and Pattern Recognition (CVPR)},\n"
        "  year = {2021}\n}"),
    Citation(
        "bitterwolf2023ninco",
        "In or Out? Fixing ImageNet Out-of-Distribution Detection Evaluation",
        "https://arxiv.org/abs/2306.00826", ("ood",),
        "@inproceedings{bitterwolf2023ninco,\n"
        "  title = {In or Out? Fixing ImageNet Out-of-Distribution Detection Evaluation},\n"
        "  author = {Bitterwolf, Julian and M{\\\"u}ller, Maximilian and Hein, Matthias},\n"
        "  booktitle = {International Conference on Machine Learning (ICML)},\n"
        "  year = {2023}\n}"),
    Citation(
        "ming2022delving",
        "Delving into Out-of-Distribution Detection with Vision-Language Representations",
        "https://arxiv.org/abs/2211.13445", ("ood",),
        "@inproceedings{ming2022delving,\n"
        "  title = {Delving into Out-of-Distribution Detection with Vision-Language "
        "Representations},\n"
        "  author = {Ming, Yifei and Cai, Ziyang and Gu, Jiuxiang and Sun, Yiyou and Li, Wei "
        "and Li, Yixuan},\n"
        "  booktitle = {Advances in Neural Information Processing Systems (NeurIPS)},\n"
        "  year = {2022}\n}"),
    Citation(
        "seed004_failure_modes_rl",
        "Discovering Failure Modes in Vision-Language Models using RL",
        "https://github.com/vlmrobust/leaderboard/blob/main/docs/discover.md",
        ("failure-discovery",),
        # Our copy of the seed gives neither its authors nor its venue: the
        # entry names none rather than guessing them.
        "@misc{seed004_failure_modes_rl,\n"
        "  title = {Discovering Failure Modes in Vision-Language Models using RL},\n"
        "  note = {Seed paper 004 of vlmrobust; our copy names no author and no venue}\n}"),
)


# vlmrobust itself (software). The organisation in the URL is the placeholder
# the submissions README names until the project's hub organisation exists.
VLMROBUST = Citation(
    "vlmrobust",
    "vlmrobust: robustness benchmarks, reference evaluator and leaderboard for VLMs and CLIP",
    "https://github.com/vlmrobust/leaderboard", ("*",),
    "@software{vlmrobust,\n"
    "  title = {vlmrobust: Robustness Benchmarks, Reference Evaluator and Leaderboard for "
    "Vision-Language Models and {CLIP}},\n"
    "  author = {{The vlmrobust contributors}},\n"
    "  year = {2026},\n"
    "  version = {0.1.0},\n"
    "  url = {https://github.com/vlmrobust/leaderboard}\n}")


def for_family(family: str) -> tuple[Citation, ...]:
    """The citations a dataset card of ``family`` carries.

    >>> [c.key for c in for_family("bench-c")]
    ['sui2025benchc', 'hendrycks2019benchmarking']
    """
    return tuple(c for c in CITATIONS if family in c.families or "*" in c.families)
