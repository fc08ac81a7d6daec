"""Tiny models with a language-model head for the tests of engine.models' scoring (test_lm_*).

The tiny fixtures are base models (``LlamaModel``, ``BertModel``); the ones with a tied head
(Gemma 2, GPT-2) score as they are. A Llama with a head is the tiny Llama with its embeddings
tied (its final norm is stored), a BERT with an MLM head the tiny BERT with seeded
``cls.predictions.*`` weights added.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file, save_file

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
TEXT = "The quick brown fox jumps over the lazy dog, and then it runs far away."


def tied_llama(root: Path) -> Path:
    """The tiny Llama with ``tie_word_embeddings`` true: its head is its embedding matrix."""
    folder = root / "tiny-llama-tied"
    shutil.copytree(FIXTURES / "tiny-llama", folder)
    config = json.loads((folder / "config.json").read_text())
    config["tie_word_embeddings"] = True
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def with_weights(root: Path, fixture: str, name: str, extra: dict[str, np.ndarray],
                 config: dict[str, object] | None = None) -> Path:
    """A copy of ``fixture`` whose weights also hold ``extra`` (in one file)."""
    folder = root / name
    shutil.copytree(FIXTURES / fixture, folder)
    weights: dict[str, np.ndarray] = {}
    for path in sorted(folder.glob("*.safetensors")):
        weights.update(load_file(path))
        path.unlink()
    (folder / "model.safetensors.index.json").unlink(missing_ok=True)
    save_file({**weights, **extra}, folder / "model.safetensors")
    if config:
        values = json.loads((folder / "config.json").read_text())
        values.update(config)
        (folder / "config.json").write_text(json.dumps(values))
    return folder


def bert_with_mlm(root: Path) -> Path:
    """The tiny BERT with a seeded masked-LM head (decoder tied to the word embeddings)."""
    config = json.loads((FIXTURES / "tiny-bert" / "config.json").read_text())
    hidden, vocab = config["hidden_size"], config["vocab_size"]
    rng = np.random.default_rng(5)
    extra = {"cls.predictions.transform.dense.weight": rng.normal(0, 0.2, (hidden, hidden)),
             "cls.predictions.transform.dense.bias": rng.normal(0, 0.1, hidden),
             "cls.predictions.transform.LayerNorm.weight": 1 + rng.normal(0, 0.1, hidden),
             "cls.predictions.transform.LayerNorm.bias": rng.normal(0, 0.1, hidden),
             "cls.predictions.bias": rng.normal(0, 0.1, vocab)}
    return with_weights(root, "tiny-bert", "tiny-bert-mlm",
                        {k: v.astype(np.float32) for k, v in extra.items()})


def token_losses(logits: np.ndarray, ids: tuple[int, ...] | np.ndarray) -> np.ndarray:
    """−ln softmax(logits row t)[id t + 1] for t < n − 1, in float64."""
    z = logits.astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    z -= np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -z[np.arange(len(ids) - 1), np.asarray(ids[1:])]
