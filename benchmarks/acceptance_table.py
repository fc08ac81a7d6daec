"""The acceptance table of issue 53: for every tiny fixture family, opened as its Hugging Face
folder and written as GGUF the way llama.cpp's converter writes it, the largest |Δp| of the
attention weights (every layer, head, row and key) against transformers' own.

Run from the repository root (``gguf`` is installed with the app)::

    python benchmarks/acceptance_table.py

The references are transformers 5.25's eager attention (``tests/fixtures/make_model_fixtures
.py``): the folder's ``reference.npz``; for a GGUF file of Gemma 2 and 3, the folder run with
what llama.cpp makes of the file (``reference-key-width.npz``: Gemma 2's scale;
``reference-gguf.npz``: Gemma 3's scale and window pattern). Mistral folders are written as
llama.cpp's converter writes them, as "llama", which has no sliding window: the -sw row's GGUF
column shows what that costs past the window; so does Qwen2's (llama.cpp's qwen2 has none
either, and the converter writes none). BERT and GPT-2 are folder-only. Q8_0 is measured
against the same reference (what quantization moves) and against this app on the folder
whose weights hold what Q8_0 keeps of them (the issue's check of the dequantization). Figures
are printed, never asserted (the tests assert the bounds).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.models import open_model  # noqa: E402
from tests.engine.test_gguf_archs import AS_GGUF, _dequantized_folder  # noqa: E402
from tests.engine.test_models import weights_from_file  # noqa: E402
from tests.fixtures.gguf_convert import folder_to_gguf  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "models"
FAMILIES = ("bert", "gpt2", "llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3", "olmo2",
            "granite", "phi3", "mistral-sw", "gemma2-sw", "qwen2-sw")
FOLDER_ONLY = ("bert", "gpt2")
#: The reference a GGUF file of the family must give, where it is not the folder's.
GGUF_REFERENCE = {"gemma2": "reference-key-width.npz", "gemma2-sw": "reference-key-width.npz",
                  "gemma3": "reference-gguf.npz"}


def weights(model, text: str) -> dict[str, np.ndarray]:
    """The attention weights of every captured layer, from the capture's tensor file."""
    tf = model.capture(text).tensor_file()
    return {f"layer{layer}.attn": weights_from_file(tf, layer) for layer in tf.layers}


def max_dp(model, ref) -> float:
    """The largest |Δp| over every captured layer against ``ref``'s weights."""
    return max(float(np.abs(p - ref[name]).max())
               for name, p in weights(model, str(ref["text"])).items())


def main() -> None:
    import gguf

    q8 = gguf.GGMLQuantizationType.Q8_0
    rows = [("family", "folder", "GGUF F32", "GGUF Q8_0", "Q8_0 vs dequantized folder")]
    with tempfile.TemporaryDirectory() as tmp:
        for family in FAMILIES:
            folder = FIXTURES / f"tiny-{family}"
            row = [family, f"{max_dp(open_model(folder), np.load(folder / 'reference.npz')):.1e}"]
            if family in FOLDER_ONLY:
                row += ["folder only"] * 3
            else:
                ref = np.load(folder / GGUF_REFERENCE.get(family, "reference.npz"))
                for quant, tag in ((None, "f32"), (q8, "q8_0")):
                    path = folder_to_gguf(folder, Path(tmp) / f"{family}.{tag}.gguf",
                                          quant=quant)
                    row.append(f"{max_dp(open_model(path), ref):.1e}")
                dequantized = _dequantized_folder(folder, Path(tmp) / f"{family}-dq",
                                                  AS_GGUF.get(folder.name))
                text = str(ref["text"])
                want = {**weights(open_model(dequantized), text), "text": text}
                row.append(f"{max_dp(open_model(path), want):.1e}")
            rows.append(tuple(row))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    for r in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)))


if __name__ == "__main__":
    main()
