"""Hostile model containers, built in code for test_hostile_model_files.py: GGUF files
written byte by byte as llama.cpp lays them out, copies of the tiny fixture models with one
file, offset or index entry broken, and the table of cases with the words each one-line
refusal must hold."""

from __future__ import annotations

import json
import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "models"
TEXT = "The quick brown fox jumps over the lazy dog."


# --- GGUF written byte by byte, as llama.cpp lays it out -----------------------------------

def gguf_string(text: str | bytes) -> bytes:
    raw = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(raw)) + raw


def gguf_kv(key: str, kind: int, payload: bytes) -> bytes:
    return gguf_string(key) + struct.pack("<I", kind) + payload


def _kv_str(key: str, value: str) -> bytes:
    return gguf_kv(key, 8, gguf_string(value))


def raw_gguf(path: Path, kvs: list[bytes], infos: list[tuple[str, tuple[int, ...], int, int]],
             data: bytes = b"", *, n_tensors: int | None = None, n_kv: int | None = None,
             alignment: int = 32, tail: bytes = b"") -> Path:
    """A GGUF v3 file: ``kvs`` (already encoded), tensor ``infos`` (name, dims fastest first,
    type, offset), the data section at the next multiple of ``alignment``."""
    head = b"GGUF" + struct.pack("<IQQ", 3, len(infos) if n_tensors is None else n_tensors,
                                 len(kvs) if n_kv is None else n_kv)
    body = head + b"".join(kvs)
    for name, dims, kind, offset in infos:
        body += gguf_string(name) + struct.pack(f"<I{len(dims)}Q", len(dims), *dims)
        body += struct.pack("<IQ", kind, offset)
    body += tail
    body += bytes(-len(body) % alignment)
    path.write_bytes(body + data)
    return path


LLAMA = _kv_str("general.architecture", "llama")
F32 = 0


def _two_tensors(path: Path, offsets: tuple[int, int], *, kvs: tuple[bytes, ...] = (),
                 alignment: int = 32) -> Path:
    """Two F32 tensors of 8 values (32 bytes each) at ``offsets`` in a 96-byte data section."""
    return raw_gguf(path, [LLAMA, *kvs], [("a.weight", (8,), F32, offsets[0]),
                                          ("b.weight", (8,), F32, offsets[1])],
                    bytes(96), alignment=alignment)


def _nested_arrays(path: Path, depth: int) -> Path:
    """A key whose value is an array of one array of one array … ``depth`` deep."""
    nested = struct.pack("<IQ", 9, 1) * depth + struct.pack("<IQ", 4, 0)
    return raw_gguf(path, [LLAMA, gguf_kv("x.nested", 9, nested)], [])


def _patched_gguf(path: Path, key: str, kind: int, value: bytes) -> Path:
    """tiny-llama.gguf with the 4-byte value of ``key`` rewritten (same length)."""
    data = bytearray((FIXTURES / "tiny-llama.gguf").read_bytes())
    at = data.index(gguf_string(key)) + len(gguf_string(key))
    data[at:at + 4 + len(value)] = struct.pack("<I", kind) + value
    path.write_bytes(bytes(data))
    return path


def _gguf_tensor_set(path: Path, name: str, value: float) -> Path:
    """tiny-llama.gguf with the first value of the F32 tensor ``name`` set to ``value``."""
    import gguf

    shutil.copyfile(FIXTURES / "tiny-llama.gguf", path)
    offset = next(t.data_offset for t in gguf.GGUFReader(path).tensors if t.name == name)
    data = bytearray(path.read_bytes())
    data[offset:offset + 4] = struct.pack("<f", value)
    path.write_bytes(bytes(data))
    return path


# --- Hugging Face folders ---------------------------------------------------------------------

def tiny(tmp: Path, arch: str, edit: Callable[[Path], object] = lambda f: None) -> Path:
    folder = tmp / arch
    shutil.copytree(FIXTURES / f"tiny-{arch}", folder)
    edit(folder)
    return folder


def _safetensors_raw(folder: Path, header: dict, data: bytes, name: str = "model.safetensors"
                     ) -> None:
    raw = json.dumps(header).encode()
    (folder / name).write_bytes(struct.pack("<Q", len(raw)) + raw + data)


def _gpt2_entries(entries: dict[str, list[int]]) -> Callable[[Path], None]:
    """A gpt2 folder whose model.safetensors holds F32 tensors of 4 values at ``entries``."""
    def edit(folder: Path) -> None:
        header = {name: {"dtype": "F32", "shape": [4], "data_offsets": offsets}
                  for name, offsets in entries.items()}
        _safetensors_raw(folder, header, bytes(64))
    return edit


def _index(weight_map: object) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        (folder / "model.safetensors.index.json").write_text(
            json.dumps({"metadata": {}, "weight_map": weight_map}))
    return edit


def _first_shard_at(target: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        index = json.loads((folder / "model.safetensors.index.json").read_text())
        first = min(index["weight_map"].values())
        index["weight_map"] = {k: (target if v == first else v)
                               for k, v in index["weight_map"].items()}
        (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    return edit


def _symlinked_shard(folder: Path) -> None:
    shard = sorted(folder.glob("model-*.safetensors"))[0]
    outside = folder.parent / "elsewhere"
    outside.mkdir()
    shard.rename(outside / shard.name)
    shard.symlink_to(outside / shard.name)


#: The bytes of NaN and inf in each float dtype a safetensors file may hold.
_NOT_FINITE = {("F32", "nan"): b"\x00\x00\xc0\x7f", ("F32", "inf"): b"\x00\x00\x80\x7f",
               ("F16", "nan"): b"\x00\x7e", ("F16", "inf"): b"\x00\x7c",
               ("BF16", "nan"): b"\xc0\x7f", ("BF16", "inf"): b"\x80\x7f"}


def _set_tensor(shard: str, name: str, value: str) -> Callable[[Path], None]:
    """Column 3 of tensor ``name`` set to ``value`` ("nan" or "inf"), in the file's bytes
    (every row an embedding may pick holds one)."""
    def edit(folder: Path) -> None:
        path = folder / shard
        data = bytearray(path.read_bytes())
        size = struct.unpack_from("<Q", data)[0]
        entry = json.loads(data[8:8 + size])[name]
        word = _NOT_FINITE[entry["dtype"], value]
        begin = 8 + size + entry["data_offsets"][0]
        rows, cols = entry["shape"]
        for row in range(rows):
            at = begin + (row * cols + 3) * len(word)
            data[at:at + len(word)] = word
        path.write_bytes(bytes(data))
    return edit


def _fifo(name: str) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        (folder / name).unlink()
        os.mkfifo(folder / name)
    return edit


def _replace(name: str, text: str) -> Callable[[Path], None]:
    return lambda folder: (folder / name).write_text(text)


def _nested_header(folder: Path) -> None:
    (folder / "model.safetensors").write_bytes(
        struct.pack("<Q", 400_000) + b"[" * 200_000 + b"]" * 200_000)


DEEP = "[" * 200_000 + "]" * 200_000
SHARD1 = "model-00001-of-00002.safetensors"

#: name -> (builder in tmp_path, capture a text too, words the one-line message must hold)
CASES: dict[str, tuple[Callable[[Path], Path], bool, tuple[str, ...]]] = {
    # 1. nothing blocks
    "a FIFO named x.gguf": (lambda d: (os.mkfifo(d / "x.gguf"), d / "x.gguf")[1], False,
                            ("x.gguf", "FIFO", "not a regular file")),
    "a FIFO as model.safetensors": (lambda d: tiny(d, "gpt2", _fifo("model.safetensors")),
                                    False, ("model.safetensors", "FIFO")),
    "a FIFO as config.json": (lambda d: tiny(d, "gpt2", _fifo("config.json")), False,
                              ("config.json", "FIFO")),
    "a FIFO as tokenizer.json": (lambda d: tiny(d, "gpt2", _fifo("tokenizer.json")), False,
                                 ("tokenizer.json", "FIFO")),
    "a FIFO as the index": (lambda d: tiny(d, "llama", _fifo("model.safetensors.index.json")),
                            False, ("model.safetensors.index.json", "FIFO")),
    "a FIFO as a shard": (lambda d: tiny(d, "llama", _fifo(SHARD1)), False, (SHARD1, "FIFO")),
    "a device as model.safetensors": (
        lambda d: tiny(d, "gpt2", lambda f: ((f / "model.safetensors").unlink(), (
            f / "model.safetensors").symlink_to("/dev/zero"))), False,
        ("model.safetensors", "device")),
    # 2. bounded before built
    "2^24 tensor infos": (lambda d: raw_gguf(d / "many.gguf", [LLAMA], [], n_tensors=1 << 24),
                          False, ("many.gguf", "16,777,216 tensors", "at most 65,536")),
    "60,000 tensor infos in 200 bytes": (
        lambda d: raw_gguf(d / "short.gguf", [LLAMA], [], n_tensors=60_000), False,
        ("short.gguf", "60,000 tensors", "more than its", "bytes can hold")),
    "2^40 metadata keys": (lambda d: raw_gguf(d / "keys.gguf", [LLAMA], [], n_kv=1 << 40), False,
                           ("keys.gguf", "1,099,511,627,776 metadata keys")),
    "a key of 2^60 bytes": (lambda d: raw_gguf(d / "key.gguf", [struct.pack("<Q", 1 << 60)], [],
                                            tail=bytes(64)), False,
                            ("key.gguf", "a metadata key", "1,152,921,504,606,846,976")),
    "an array of 2^40 u32": (
        lambda d: raw_gguf(d / "arr.gguf",
                           [LLAMA, gguf_kv("x.a", 9, struct.pack("<IQ", 4, 1 << 40))], []), False,
        ("arr.gguf", "'x.a'", "1,099,511,627,776 values", "at most 4,194,304")),
    "2^20 strings in 1 KB": (
        lambda d: raw_gguf(d / "strs.gguf", [LLAMA, gguf_kv("tokenizer.ggml.tokens", 9,
                                                     struct.pack("<IQ", 8, 1 << 20))], [],
                        tail=bytes(1024)),
        False, ("strs.gguf", "'tokenizer.ggml.tokens'", "1,048,576 values", "bytes left")),
    "arrays nested 100,000 deep": (lambda d: _nested_arrays(d / "deep.gguf", 100_000), False,
                                   ("deep.gguf", "'x.nested'", "more than 4 deep")),
    "architecture gpt2 before 10^6 garbage tensor infos": (
        lambda d: raw_gguf(d / "arch.gguf", [_kv_str("general.architecture", "gpt2")], [],
                        n_tensors=60_000, tail=b"\xff" * 1_500_000), False,
        ("arch.gguf", "architecture 'gpt2'", "supported: llama")),
    "a safetensors header of 2^40 bytes": (
        lambda d: tiny(d, "gpt2", lambda f: (f / "model.safetensors").write_bytes(
            struct.pack("<Q", 1 << 40) + b"{}")), False,
        ("model.safetensors", "1,099,511,627,776 bytes", "at most 16,777,216")),
    # 3. JSON nested 200k deep
    "config.json nested 200k deep": (lambda d: tiny(d, "gpt2", _replace("config.json", DEEP)),
                                     False, ("config.json", "nested too deeply")),
    "a safetensors header nested 200k deep": (lambda d: tiny(d, "gpt2", _nested_header),
                                              False, ("model.safetensors", "nested too deeply")),
    "the index nested 200k deep": (
        lambda d: tiny(d, "llama", _replace("model.safetensors.index.json", DEEP)), False,
        ("model.safetensors.index.json", "nested too deeply")),
    # 4. silently wrong before: now refused
    "negative data_offsets": (lambda d: tiny(d, "gpt2", _gpt2_entries({"w": [-16, 0]})),
                              False, ("model.safetensors", "'w'", "[-16, 0]", "0 ≤ begin ≤ end")),
    "data_offsets begin > end": (lambda d: tiny(d, "gpt2", _gpt2_entries({"w": [32, 16]})),
                                 False, ("'w'", "[32, 16]", "0 ≤ begin ≤ end")),
    "overlapping tensors": (
        lambda d: tiny(d, "gpt2", _gpt2_entries({"a": [0, 16], "b": [8, 24]})), False,
        ("model.safetensors", "'b' (bytes 8..24) overlaps tensor 'a' (bytes 0..16)")),
    "data_offsets past the data": (lambda d: tiny(d, "gpt2", _gpt2_entries({"w": [64, 80]})),
                                   False, ("'w'", "runs past the end", "data section of 64")),
    "data_offsets of the wrong size": (
        lambda d: tiny(d, "gpt2", _gpt2_entries({"w": [0, 12]})), False,
        ("'w'", "holds 12 bytes", "F32 of shape (4,) needs 16")),
    "general.alignment -8": (
        lambda d: _two_tensors(d / "neg.gguf", (0, 32), kvs=(
            gguf_kv("general.alignment", 5, struct.pack("<i", -8)),)), False,
        ("neg.gguf", "general.alignment is -8", "positive power of two")),
    "general.alignment 48": (
        lambda d: _two_tensors(d / "a48.gguf", (0, 48), alignment=48, kvs=(
            gguf_kv("general.alignment", 4, struct.pack("<I", 48)),)), False,
        ("a48.gguf", "general.alignment is 48")),
    "general.alignment 32.0": (
        lambda d: _two_tensors(d / "float.gguf", (0, 32), kvs=(
            gguf_kv("general.alignment", 6, struct.pack("<f", 32.0)),)), False,
        ("float.gguf", "general.alignment is 32.0")),
    "a tensor offset off the alignment": (
        lambda d: _two_tensors(d / "off.gguf", (0, 40)), False,
        ("off.gguf", "'b.weight'", "offset 40", "alignment 32")),
    "overlapping GGUF tensors": (lambda d: _two_tensors(d / "lap.gguf", (32, 32)), False,
                                 ("lap.gguf", "'b.weight'", "overlaps tensor 'a.weight'")),
    "a shard ../other/model.safetensors": (
        lambda d: tiny(d, "llama", _first_shard_at("../other/model.safetensors")), False,
        ("model.safetensors.index.json", "'../other/model.safetensors'", "no '..'")),
    "an absolute shard path": (
        lambda d: tiny(d, "llama", _first_shard_at(str(FIXTURES / "tiny-llama" / SHARD1))),
        False, ("model.safetensors.index.json", "not absolute")),
    "a shard linked out of the folder": (lambda d: tiny(d, "llama", _symlinked_shard), False,
                                         (SHARD1, "leads outside the model folder")),
    "weight_map values that are ints": (lambda d: tiny(d, "llama", _index({"a.weight": 1})),
                                        False, ("'weight_map'", "found 1")),
    "weight_map a list": (lambda d: tiny(d, "llama", _index(["x"])), False,
                          ("'weight_map'", "must map", "found a list")),
    # 5. NaN and inf weights, named when the capture converts them
    "NaN in a q projection": (
        lambda d: tiny(d, "llama", _set_tensor(SHARD1, "layers.0.self_attn.q_proj.weight",
                                                "nan")), True,
        (SHARD1, "'layers.0.self_attn.q_proj.weight'", "NaN or infinite")),
    "inf in the embedding": (
        lambda d: tiny(d, "gpt2", _set_tensor("model.safetensors", "wte.weight", "inf")),
        True, ("model.safetensors", "'wte.weight'", "NaN or infinite")),
    "NaN in a GGUF norm": (
        lambda d: _gguf_tensor_set(d / "nan.gguf", "blk.0.attn_norm.weight", np.nan), True,
        ("nan.gguf", "'blk.0.attn_norm.weight'", "NaN or infinite")),
    # 7. special token ids
    "a GGUF bos id of -5": (
        lambda d: _patched_gguf(d / "bos.gguf", "tokenizer.ggml.bos_token_id", 5,
                                struct.pack("<i", -5)), False,
        ("bos.gguf", "tokenizer.ggml.bos_token_id is -5", "0..299")),
    "GGUF token types that are floats": (  # the array's item type i32 made f32
        lambda d: _patched_gguf(d / "types.gguf", "tokenizer.ggml.token_type", 9,
                                struct.pack("<I", 6)), False,
        ("types.gguf", "tokenizer.ggml.token_type must be a list of integers")),
    "a GGUF eos id of the vocabulary's size": (
        lambda d: _patched_gguf(d / "eos.gguf", "tokenizer.ggml.eos_token_id", 4,
                                struct.pack("<I", 300)), False,
        ("eos.gguf", "tokenizer.ggml.eos_token_id is 300", "0..299")),
}
