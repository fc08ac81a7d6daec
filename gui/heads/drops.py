"""What a drop onto the window opens: a model (folder or GGUF file) or a tensor file."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["MODEL_FOLDER_FILES", "TENSOR_SUFFIXES", "dropped_file"]

# Tensor files the window opens (and folders of .npy files); one .npy holds attention weights.
TENSOR_SUFFIXES = (".npz", ".safetensors", ".npy")
#: Files that make a dropped folder a model folder (its config.json may be the one missing).
MODEL_FOLDER_FILES = ("config.json", "model.safetensors", "model.safetensors.index.json",
                      "tokenizer.json", "pytorch_model.bin")


def dropped_file(urls: list[Any]) -> tuple[str, str]:
    """The first model among dropped ``urls`` (a .gguf file, or a folder holding any file of a
    Hugging Face model) as ("model", path), else the first tensor file or folder as
    ("tensors", path), or ("", "")."""
    paths = [url.toLocalFile() for url in urls if url.isLocalFile()]
    for path in paths:
        if (any(Path(path, name).is_file() for name in MODEL_FOLDER_FILES)
                if os.path.isdir(path) else Path(path).suffix.lower() == ".gguf"):
            return "model", path  # opening it says what the folder lacks
    for path in paths:  # none is a model
        if Path(path).suffix.lower() in TENSOR_SUFFIXES or os.path.isdir(path):
            return "tensors", path
    return "", ""
