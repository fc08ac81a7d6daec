"""The tensor file format: round trips, lazy reading, and one clear error per bad input."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
import safetensors.numpy
from safetensors import safe_open

from engine.core.memory import get_memory_budget, set_memory_budget
from engine.io.tensors import FORMAT_VERSION, TensorFileError, load_tensors, write_tensors

DTYPES = [np.float16, ml_dtypes.bfloat16, np.float32, np.float64]


def _qk(shape: tuple[int, ...], layers: tuple[int, ...] = (0, 1), seed: int = 0) -> dict:
    rng = np.random.default_rng(seed)
    out = {}
    for layer in layers:
        out[f"layer{layer}.q"] = rng.standard_normal(shape)
        out[f"layer{layer}.k"] = rng.standard_normal(shape)
    return out


def _write_npy_folder(folder: Path, arrays: dict) -> Path:
    folder.mkdir()
    for name, arr in arrays.items():
        np.save(folder / f"{name}.npy", arr)
    return folder


def _write(tmp_path: Path, fmt: str, arrays: dict, **kw) -> Path:
    if fmt == "npy":
        assert not kw
        return _write_npy_folder(tmp_path / "qk", arrays)
    return write_tensors(tmp_path / f"qk.{fmt}", arrays, **kw)


def _head(arr: np.ndarray, head: int) -> np.ndarray:
    return arr[head][None] if arr.ndim == 3 else arr[:, head]


@pytest.mark.parametrize("fmt", ["npz", "safetensors", "npy"])
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape", [(3, 5, 4), (2, 3, 5, 4)], ids=["3d", "4d"])
def test_round_trip_every_format_dtype_and_shape(tmp_path, fmt, dtype, shape) -> None:
    stored = {k: v.astype(dtype) for k, v in _qk(shape).items()}
    tf = load_tensors(_write(tmp_path, fmt, stored))
    assert (tf.format, tf.layers, tf.heads, tf.n, tf.d_k) == (fmt, (0, 1), 3, 5, 4)
    assert tf.batch == (1 if len(shape) == 3 else 2)
    assert tf.dtype == np.dtype(dtype).name
    for layer in tf.layers:
        for head in range(tf.heads):
            q, k = tf.qk(layer, head)
            assert q.dtype == np.float64 and q.shape == (tf.batch, 5, 4)
            # The stored (rounded) values come back exactly, bfloat16 included.
            want_q = _head(stored[f"layer{layer}.q"], head).astype(np.float64)
            want_k = _head(stored[f"layer{layer}.k"], head).astype(np.float64)
            np.testing.assert_array_equal(q, want_q)
            np.testing.assert_array_equal(k, want_k)
    if dtype is ml_dtypes.bfloat16:  # bfloat16 keeps ~3 significant digits of the original
        orig = _qk(shape)["layer1.k"]
        np.testing.assert_allclose(tf.qk(1, 2)[1], _head(orig, 2), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("fmt", ["npz", "safetensors"])
def test_tokens_and_meta_are_parsed(tmp_path, fmt) -> None:
    meta = {"model": "tiny", "where": "after RoPE", "scale": 0.125, "causal": True}
    path = _write(tmp_path, fmt, _qk((2, 3, 4)), tokens=["a", "b", "中"], meta=meta)
    tf = load_tensors(path)
    assert tf.tokens == ("a", "b", "中")
    assert dict(tf.meta) == meta
    assert tf.scale == 0.125 and tf.causal is True
    with pytest.raises(TypeError):
        tf.meta["scale"] = 1.0  # type: ignore[index]


def test_safetensors_metadata_holds_tokens_meta_and_version(tmp_path) -> None:
    path = write_tensors(tmp_path / "qk.safetensors", _qk((1, 2, 2)), tokens=["x", "y"],
                         meta={"causal": False})
    with safe_open(str(path), framework="np") as f:
        text = f.metadata()
    assert json.loads(text["tokens"]) == ["x", "y"]
    assert json.loads(text["meta"]) == {"causal": False}
    assert text["format_version"] == str(FORMAT_VERSION) == "1"


@pytest.mark.parametrize(
    "tokens",
    [
        np.array(json.dumps(["p", "q", "r"])),  # a JSON string, 0-d
        np.frombuffer(json.dumps(["p", "q", "r"]).encode(), dtype=np.uint8),  # JSON bytes
        np.array([b"p", b"q", b"r"]),  # a 1-D bytes array
    ],
    ids=["json-str", "json-uint8", "bytes"],
)
def test_tokens_in_other_encodings(tmp_path, tokens) -> None:
    arrays = {**_qk((1, 3, 2)), "tokens": tokens,
              "meta": np.frombuffer(b'{"scale": 2}', dtype=np.uint8)}
    tf = load_tensors(_write_npy_folder(tmp_path / "qk", arrays))
    assert tf.tokens == ("p", "q", "r")
    assert tf.scale == 2.0


def test_defaults_scale_is_inverse_sqrt_dk_and_not_causal(tmp_path) -> None:
    tf = load_tensors(write_tensors(tmp_path / "qk.npz", _qk((2, 3, 16))))
    assert tf.scale == pytest.approx(1 / math.sqrt(16)) and tf.scale == 0.25
    assert tf.causal is False and tf.tokens is None and dict(tf.meta) == {}


def test_layers_meta_gives_a_layer_its_own_name_scale_and_cap(tmp_path) -> None:
    meta = {"scale": 0.5, "cap": 30, "layers": {"1": {"name": "1/√d_k run", "scale": 0.25,
                                                       "cap": 5}}}
    tf = load_tensors(write_tensors(tmp_path / "qk.npz", _qk((1, 2, 4), layers=(0, 1)),
                                    meta=meta))
    assert (tf.layer_scale(0), tf.layer_cap(0), tf.layer_name(0)) == (0.5, 30.0, "layer 0")
    assert (tf.layer_scale(1), tf.layer_cap(1), tf.layer_name(1)) == (0.25, 5.0, "1/√d_k run")
    plain = load_tensors(write_tensors(tmp_path / "plain.npz", _qk((1, 2, 4))))
    assert plain.layer_scale(0) == 0.5 and plain.layer_cap(0) is None


def test_v_arrays_are_allowed_with_their_own_width(tmp_path) -> None:
    arrays = {**_qk((2, 3, 4), layers=(0,)), "layer0.v": np.ones((2, 3, 7))}
    assert load_tensors(write_tensors(tmp_path / "qkv.npz", arrays)).layers == (0,)
    arrays["layer0.v"] = np.ones((2, 9, 7))
    with pytest.raises(TensorFileError, match=r"'layer0\.v': n = 9"):
        load_tensors(write_tensors(tmp_path / "bad.npz", arrays))


def _bad(arrays: dict, key: str, value) -> dict:
    out = dict(arrays)
    if value is None:
        del out[key]
    else:
        out[key] = value
    return out


BASE = _qk((2, 3, 4), layers=(0, 1))
NAN = BASE["layer1.k"].copy()
NAN[1, 0, :3] = np.nan
NAN[0, 2, 0] = np.inf

BAD_CASES = {
    "ndim-2": (_bad(BASE, "layer0.q", np.ones((3, 4))), r"'layer0\.q'.*2 dimensions"),
    "ndim-5": (_bad(BASE, "layer1.k", np.ones((1, 1, 2, 3, 4))), r"'layer1\.k'.*5 dimensions"),
    "missing-k": (_bad(BASE, "layer1.k", None), r"'layer1\.k' is missing"),
    "missing-q": (_bad(BASE, "layer0.q", None), r"'layer0\.q' is missing"),
    "no-layers": ({"tokens": np.array(["a"])}, r"no layer arrays"),
    "n-mismatch": (_bad(BASE, "layer0.k", np.ones((2, 5, 4))), r"'layer0\.k': n = 5.*n = 3"),
    "dk-mismatch": (_bad(BASE, "layer0.k", np.ones((2, 3, 8))), r"'layer0\.k': d_k = 8"),
    "heads-mismatch": (_bad(BASE, "layer1.q", np.ones((4, 3, 4))), r"'layer1\.q': heads = 4"),
    "batch-mismatch": (_bad(BASE, "layer1.q", np.ones((3, 2, 3, 4))),
                       r"'layer1\.q': batch = 3"),
    "nan-inf": (_bad(BASE, "layer1.k", NAN), r"'layer1\.k': 4 NaN/inf values \(in heads 0, 1"),
    "int32": (_bad(BASE, "layer0.q", np.ones((2, 3, 4), np.int32)),
              r"'layer0\.q': unsupported dtype"),
    "dtype-mix": (_bad(BASE, "layer1.q", BASE["layer1.q"].astype(np.float32)),
                  r"'layer1\.q': dtype float32 differs"),
    "unknown-name": (_bad(BASE, "layer0.Q", np.ones((2, 3, 4))), r"'layer0\.Q': unexpected"),
    "token-count": (_bad(BASE, "tokens", np.array(["a", "b"])), r"'tokens': 2 tokens, but n = 3"),
    "meta-list": (_bad(BASE, "meta", np.array("[1, 2]")), r"'meta': expected a JSON object"),
    "meta-bad-json": (_bad(BASE, "meta", np.array("{oops")), r"'meta': not valid JSON"),
    "meta-scale": (_bad(BASE, "meta", np.array('{"scale": "big"}')), r"'meta': 'scale'"),
    "meta-cap": (_bad(BASE, "meta", np.array('{"cap": -1}')), r"'meta': 'cap' must be > 0"),
    "meta-layers": (_bad(BASE, "meta", np.array('{"layers": [1]}')), r"'meta': 'layers'"),
    "meta-layer-scale": (_bad(BASE, "meta", np.array('{"layers": {"0": {"scale": "x"}}}')),
                         r"'meta': 'layers.0.scale' must be a finite number"),
}


@pytest.mark.parametrize("fmt", ["npz", "npy", "safetensors"])
@pytest.mark.parametrize("case", sorted(BAD_CASES))
def test_each_bad_input_gives_one_clear_error(tmp_path, fmt, case) -> None:
    arrays, message = BAD_CASES[case]
    if fmt == "safetensors":
        # strings are not tensors in safetensors: store them as UTF-8 bytes
        arrays = {k: (np.frombuffer(json.dumps(v.tolist()).encode() if v.ndim else
                                    str(v).encode(), np.uint8)
                      if v.dtype.kind in "US" else v) for k, v in arrays.items()}
    path = _write(tmp_path, fmt, arrays)
    with pytest.raises(TensorFileError, match=message):
        load_tensors(path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ({"tokens": '["a", "b"]'}, r"'tokens': 2 tokens, but n = 3"),
        ({"tokens": '"abc"'}, r"'tokens': expected a list of strings"),
        ({"meta": "[1]"}, r"'meta': expected a JSON object, got list"),
        ({"meta": "{nope"}, r"'meta': not valid JSON"),
    ],
)
def test_safetensors_metadata_errors_name_the_field(tmp_path, text, message) -> None:
    path = tmp_path / "qk.safetensors"
    safetensors.numpy.save_file(BASE, str(path), metadata=text)
    with pytest.raises(TensorFileError, match=message):
        load_tensors(path)


def test_complex_dtype_is_refused_by_name(tmp_path) -> None:
    arrays = _bad(BASE, "layer0.k", np.ones((2, 3, 4), np.complex128))
    with pytest.raises(TensorFileError, match=r"'layer0\.k': unsupported dtype complex128"):
        load_tensors(write_tensors(tmp_path / "c.npz", arrays))


def test_nan_found_lazily_when_the_scan_is_skipped(tmp_path) -> None:
    path = write_tensors(tmp_path / "nan.npz", _bad(BASE, "layer1.k", NAN))
    tf = load_tensors(path, check_finite=False)
    tf.qk(0, 1)  # a clean head reads
    with pytest.raises(TensorFileError, match=r"'layer1\.k': head 0 holds 1 NaN/inf"):
        tf.qk(1, 0)
    with pytest.raises(TensorFileError, match=r"'layer1\.k': head 1 holds 3 NaN/inf"):
        tf.qk(1, 1)
    with pytest.raises(TensorFileError, match=r"^nan\.npz: layer 5 is not in the file"):
        tf.qk(5, 0)
    with pytest.raises(TensorFileError, match=r"^nan\.npz: head 2 is out of range"):
        tf.qk(0, 2)


@pytest.mark.parametrize("fmt", ["npz", "safetensors", "npy"])
def test_truncated_files_are_refused(tmp_path, fmt) -> None:
    path = _write(tmp_path, fmt, _qk((4, 32, 8)))
    target = path / "layer1.k.npy" if fmt == "npy" else path
    data = target.read_bytes()
    target.write_bytes(data[: len(data) - 200])
    with pytest.raises(TensorFileError, match=r"truncated|cannot read|not a readable|damaged"):
        load_tensors(path)


def test_other_files_and_missing_paths(tmp_path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello, these are not tensors\n")
    with pytest.raises(TensorFileError, match=r"notes\.txt: not a tensor file"):
        load_tensors(text)
    with pytest.raises(TensorFileError, match=r"no such file"):
        load_tensors(tmp_path / "gone.npz")
    (tmp_path / "empty").mkdir()
    with pytest.raises(TensorFileError, match=r"no \.npy files"):
        load_tensors(tmp_path / "empty")
    np.save(tmp_path / "one.npy", np.ones((1, 2, 2)))
    # One .npy file is one array: only attention weights stacked by layer are read so.
    with pytest.raises(TensorFileError, match=r"one\.npy: array 'one': shape \(1, 2, 2\); a "
                       r"file of one array holds attention weights stacked as \(layers, batch"):
        load_tensors(tmp_path / "one.npy")
    with pytest.raises(TensorFileError, match=r"'layer0\.q'.*(pickled|cannot read)"):
        load_tensors(write_tensors(tmp_path / "obj.npz",
                                   _bad(BASE, "layer0.q", np.array([{}], dtype=object))))
    assert issubclass(TensorFileError, ValueError)


def test_memory_guard_refuses_a_head_too_large(tmp_path) -> None:
    path = write_tensors(tmp_path / "big.npz", _qk((1, 64, 4)))
    old = get_memory_budget()
    try:
        set_memory_budget(64 * 64 * 8 - 1)  # the pair fits, the 64×64 logits do not
        with pytest.raises(TensorFileError, match=r"logits \(1×64×64\).*memory budget"):
            load_tensors(path)
        set_memory_budget(64 * 64 * 8)
        tf = load_tensors(path)
        set_memory_budget(2 * 64 * 4 * 8 - 1)  # the q, k pair itself is too large
        with pytest.raises(TensorFileError, match=r"q and k \(1×64×4\)"):
            tf.qk(0, 0)
    finally:
        set_memory_budget(old)


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_writer_reports_an_unwritable_path_as_oserror(tmp_path, suffix) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        write_tensors(tmp_path / "no" / f"x{suffix}", BASE)
    assert missing.value.strerror == "No such file or directory"
    assert not (tmp_path / "no").exists()


def test_writer_refuses_other_suffixes(tmp_path) -> None:
    with pytest.raises(ValueError, match=r"\.npz or \.safetensors"):
        write_tensors(tmp_path / "x.pt", BASE)


def _format_page_blocks() -> list[tuple[str, str]]:
    """The fenced blocks of the tensor format's page (docs/tensor-format.md, linked from the
    README)."""
    page = Path(__file__).resolve().parents[2] / "docs" / "tensor-format.md"
    text = page.read_text(encoding="utf-8")
    assert text.startswith("# Your own q and k: the tensor file format (version 1)")
    return re.findall(r"^```(\w+)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL)


def test_readme_recipes_compile() -> None:
    """The torch recipes are ```py (torch is not installed here, and tests/test_readme.py runs
    every ```python block); tests/engine/test_real_layouts.py checks that they are the code
    that wrote its fixtures. Here: each compiles, and the q-and-k recipe takes q and k after
    RoPE with grouped-query keys repeated."""
    recipes = [code for lang, code in _format_page_blocks() if lang == "py"]
    assert len(recipes) >= 4
    for code in recipes:
        compile(code, "docs/tensor-format.md", "exec")
    capture = next(code for code in recipes if "def capture_qk" in code)
    assert "AttentionInterface.register" in capture and "repeat_interleave" in capture
    assert "register_forward_hook" not in "".join(recipes)  # before RoPE: wrong logits
