"""Builders of hostile models for tests/engine/test_hostile_model_configs.py: the tiny fixtures
copied to a test's folder with their config, weights or GGUF metadata edited in code."""

from __future__ import annotations

import functools
import json
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import safetensors.numpy

from engine.models.gguf_file import GgufFile
from engine.models.weights import SafetensorsWeights
from tests.engine.hostile_containers import FIXTURES, gguf_string
from tests.engine.hostile_containers import tiny as copy_fixture

GGUF = FIXTURES / "tiny-llama.gguf"


def with_config(arch: str, edit: Callable[[dict], Any]) -> Callable[[Path], Path]:
    """A builder: the tiny ``arch`` folder with ``edit`` applied to its config."""
    def build(tmp_path: Path) -> Path:
        folder = copy_fixture(tmp_path, arch)
        config = json.loads((folder / "config.json").read_text())
        edit(config)
        (folder / "config.json").write_text(json.dumps(config))
        return folder

    return build


def edited(arch: str, **values: Any) -> Callable[[Path], Path]:
    return with_config(arch, lambda config: config.update(values))


def with_rope(arch: str, **values: Any) -> Callable[[Path], Path]:
    return with_config(arch, lambda config: config["rope_parameters"].update(values))


def without_rope_key(arch: str, key: str) -> Callable[[Path], Path]:
    return with_config(arch, lambda config: config["rope_parameters"].pop(key))


def with_weights(arch: str, edit: Callable[[dict[str, np.ndarray]], Any]) -> Callable[[Path], Path]:
    """A builder: the tiny ``arch`` folder with its weights (as float32, in one file) edited."""
    def build(tmp_path: Path) -> Path:
        folder = copy_fixture(tmp_path, arch)
        files = sorted(folder.glob("*.safetensors"))
        store = SafetensorsWeights(files)
        tensors = {name: store.get(name) for name in store.names}
        for path in [*files, *folder.glob("*.index.json")]:
            path.unlink()
        edit(tensors)
        safetensors.numpy.save_file(tensors, str(folder / "model.safetensors"))
        return folder

    return build


def dropped(arch: str, name: str) -> Callable[[Path], Path]:
    return with_weights(arch, lambda tensors: tensors.pop(name))


def reshaped(arch: str, name: str, shape: tuple[int, ...]) -> Callable[[Path], Path]:
    def edit(tensors: dict[str, np.ndarray]) -> None:
        tensors[name] = np.zeros(shape, np.float32)

    return with_weights(arch, edit)


def _gguf_value(value: Any) -> bytes:
    """A GGUF metadata value: its type and bytes (the types llama.cpp writes)."""
    if isinstance(value, bool):
        return struct.pack("<I?", 7, value)
    if isinstance(value, str):
        raw = value.encode()
        return struct.pack("<IQ", 8, len(raw)) + raw
    if isinstance(value, int):
        for kind, fmt, low, high in ((4, "<I", 0, 2**32), (10, "<Q", 0, 2**64),
                                     (11, "<q", -2**63, 2**63)):
            if low <= value < high:
                return struct.pack("<I", kind) + struct.pack(fmt, value)
        raise ValueError(value)
    if isinstance(value, float):
        return struct.pack("<Id", 12, value)
    items = [_gguf_value(item) for item in value]
    item_kind = struct.unpack("<I", items[0][:4])[0] if items else 4
    return struct.pack("<IIQ", 9, item_kind, len(items)) + b"".join(i[4:] for i in items)


@functools.cache
def _source_gguf() -> tuple[dict[str, Any], tuple[tuple[str, bytes], ...], int]:
    """tiny-llama.gguf's metadata, its tensor infos (written again) and where its data starts."""
    import gguf

    reader = gguf.GGUFReader(GGUF)
    infos = []
    for tensor in reader.tensors:
        dims = [int(d) for d in tensor.shape]  # as the file lists them, fastest first
        infos.append((tensor.name, struct.pack(f"<I{len(dims)}QIQ", len(dims), *dims,
                                               int(tensor.tensor_type),
                                               tensor.data_offset - reader.data_offset)))
    return GgufFile(GGUF).metadata, tuple(infos), reader.data_offset


def gguf_with(changes: dict[str, Any], rename: dict[str, str] | None = None
              ) -> Callable[[Path], Path]:
    """A builder: tiny-llama.gguf with metadata ``changes`` (None removes a key) and tensors
    renamed by ``rename``; the tensor data is copied as it is."""
    def build(tmp_path: Path) -> Path:
        source_metadata, infos, data_start = _source_gguf()
        metadata = {key: value for key, value in {**source_metadata, **changes}.items()
                    if value is not None}
        kv = b"".join(gguf_string(key) + _gguf_value(value)
                      for key, value in metadata.items())
        tensors = b"".join(gguf_string((rename or {}).get(name, name)) + info
                           for name, info in infos)
        head = b"GGUF" + struct.pack("<IQQ", 3, len(infos), len(metadata)) + kv + tensors
        path = tmp_path / "model.gguf"
        path.write_bytes(head + bytes(-len(head) % 32) + GGUF.read_bytes()[data_start:])
        return path

    return build
