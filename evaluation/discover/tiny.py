"""A tiny text-only questioner for the planted world (tests, the demo, CPU
runs): a word-level tokenizer over the planted phrasings and a 2-layer
Llama-architecture causal LM, randomly initialised from a config and then
given a prior by a short next-token training on completions whose k questions
are drawn uniformly from the planted types.

It stands in for seed 004's questioner VLM where no VLM weights exist: it does
not see the image (its prompt is the same for every image), so it can learn
*which kinds* of question fail, which is what the planted-blind-spot test
measures. A questioner that sees images is any image-text-to-text folder
(``vlm:DIR``); TRL trains both the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlmrobust.evaluation.discover.planted import TEMPLATES
from vlmrobust.evaluation.discover.prompts import questioner_prompt

TINY = "discover planted --questioner-out"
SPECIAL = ["<pad>", "<s>", "</s>", "<unk>"]
FILLER = ["the", "a", "is", "of", "and", "what", "why", "image", "picture", "colour", "it"]


def completion_text(questions: Sequence[str]) -> str:
    """k questions in the seed's completion format, one per line."""
    return "\n".join(f"<response_{i}> {q} </response_{i}>" for i, q in
                     enumerate(questions, start=1))


def vocabulary(k: int) -> list[str]:
    words = set(FILLER)
    for qs in TEMPLATES.values():
        for q in qs:
            words.update(q.split())
    words.update(questioner_prompt(k).split())
    for i in range(1, k + 1):
        words.update((f"<response_{i}>", f"</response_{i}>"))
    return SPECIAL + sorted(words - set(SPECIAL))


def make_tokenizer(k: int) -> Any:
    """Word-level (whitespace-split) fast tokenizer; decoding joins with spaces."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(vocabulary(k))}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>",
                                   eos_token="</s>", unk_token="<unk>")


def prior_completions(n: int, k: int, seed: int,
                      type_weights: Mapping[str, float] | None = None) -> list[str]:
    """n completions of k questions: types drawn by ``type_weights`` (default
    uniform), phrasings uniform within a type."""
    rng = np.random.default_rng([seed, 4])
    types = list(TEMPLATES)
    w = np.array([1.0 if type_weights is None else float(type_weights.get(t, 0.0))
                  for t in types])
    if not (np.isfinite(w).all() and (w >= 0).all() and w.sum() > 0):
        raise ValueError(f"type_weights must be >= 0 with a positive sum, got {type_weights}")
    out = []
    for _ in range(n):
        qs = []
        for _ in range(k):
            phrasings = TEMPLATES[types[int(rng.choice(len(types), p=w / w.sum()))]]
            qs.append(phrasings[int(rng.integers(len(phrasings)))])
        out.append(completion_text(qs))
    return out


def make_tiny_questioner(out: Path, k: int = 2, seed: int = 0, prior_steps: int = 150,
                         hidden: int = 32, layers: int = 2,
                         type_weights: Mapping[str, float] | None = None) -> Path:
    """Build, give a prior to, and save the tiny questioner in ``out``
    (loadable by AutoModelForCausalLM / AutoTokenizer and by TRL)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from vlmrobust.core.files.owned import check_owned_folder

    check_owned_folder(out, "--questioner-out", TINY)
    tok = make_tokenizer(k)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=2 * hidden,
                      num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=256, pad_token_id=tok.pad_token_id,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      tie_word_embeddings=False)
    gen = torch.Generator().manual_seed(seed)
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        model = LlamaForCausalLM(cfg)
    prompt = questioner_prompt(k)
    n_prompt = len(tok(prompt)["input_ids"])
    texts = [f"{prompt} {c} {tok.eos_token}" for c in prior_completions(512, k, seed, type_weights)]
    enc = tok(texts, padding=True, return_tensors="pt")
    labels = enc["input_ids"].clone()
    labels[enc["attention_mask"] == 0] = -100
    labels[:, :n_prompt] = -100  # the prior is over completions, not over the prompt
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for _ in range(prior_steps):
        idx = torch.randint(0, len(texts), (32,), generator=gen)
        loss = model(input_ids=enc["input_ids"][idx], attention_mask=enc["attention_mask"][idx],
                     labels=labels[idx]).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    model.generation_config.pad_token_id = tok.pad_token_id
    from vlmrobust.core.files.owned import owned_directory

    with owned_directory(out, TINY) as tmp:
        model.save_pretrained(tmp)
        tok.save_pretrained(tmp)
    return out
