"""engine.analysis.heads (per-head diagnostics) and `python main.py inspect` (engine.cli.inspect).

Every expected value is computed independently here (plain numpy, no engine code), except
where the test is that a replayed rule gives the engine's own logits.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engine.cli.inspect as cli_inspect
from engine.analysis.heads import diagnose_head
from engine.cli.inspect import COLUMNS, inspect_command
from engine.core import parallel
from engine.core.attention import attention_logits
from engine.core.stats import SATURATION_THRESHOLD
from main import build_parser

RNG_SEED = 20231201


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------------------------------------
# Constructed heads
# ---------------------------------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(n=st.integers(2, 40), d_k=st.integers(1, 8), seed=st.integers(0, 2**32 - 1))
def test_keys_all_equal_one_vector_give_uniform_weights(n: int, d_k: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    # Small integers: every q·k is exact, so every row of logits is exactly constant.
    q = rng.integers(-4, 5, size=(2, n, d_k)).astype(np.float64)
    key = rng.integers(-4, 5, size=d_k).astype(np.float64)
    k = np.broadcast_to(key, (2, n, d_k)).copy()
    diag = diagnose_head(q, k, scale=0.5)
    assert diag.entropy_mean == math.log(n) == diag.entropy_uniform
    assert diag.p_max_mean == 1.0 / n
    assert diag.sink_mass == pytest.approx(1.0 / n, rel=1e-14)
    assert "near-uniform" in diag.flags
    assert "saturated" not in diag.flags and "sink" not in diag.flags


def test_planted_sink_gives_the_planted_mass() -> None:
    rng = np.random.default_rng(RNG_SEED)
    batch, n, d_k = 3, 64, 16
    q = rng.standard_normal((batch, n, d_k))
    k = 0.1 * rng.standard_normal((batch, n, d_k))
    direction = np.ones(d_k) / math.sqrt(d_k)
    q += 3.0 * direction  # every query has a large component along `direction` ...
    k[:, 0] = 7.0 * direction  # ... and key 0 lies on it: a sink column
    c = 1.0 / math.sqrt(d_k)
    # Independent computation of the mass on key 0, one batch entry at a time.
    expected = np.mean([_softmax_rows(c * q[b] @ k[b].T)[:, 0] for b in range(batch)])
    assert expected > 0.5  # the planted sink is a real one
    diag = diagnose_head(q, k)
    assert diag.sink_mass == pytest.approx(expected, rel=1e-12)
    assert "sink" in diag.flags
    assert diag.scale == c


def test_saturated_head_is_flagged() -> None:
    rng = np.random.default_rng(RNG_SEED)
    q = rng.standard_normal((1, 32, 8))
    k = q.copy()  # each query's own key dominates once the logits are large
    diag = diagnose_head(q, k, scale=50.0)
    p = _softmax_rows(50.0 * q[0] @ k[0].T)
    assert diag.saturated_share == pytest.approx(np.mean(p.max(axis=1) > SATURATION_THRESHOLD))
    assert diag.saturated_share > 0.5 and "saturated" in diag.flags
    assert diag.rho == pytest.approx(1.0)


def test_gaussian_head_follows_the_sqrt_dk_law() -> None:
    rng = np.random.default_rng(RNG_SEED)
    batch, n, d_k = 4, 256, 64
    q = rng.standard_normal((batch, n, d_k))
    k = rng.standard_normal((batch, n, d_k))
    # The n² logits of one batch entry are not independent (they share rows and columns);
    # the std of their sample std is about 1/√(2n) relative (std of q·k over ~n independent
    # rows and ~n independent columns), so 5/√(2·batch·n) is a safe tolerance.
    tol = 5.0 / math.sqrt(2 * batch * n)
    scaled = diagnose_head(q, k, rule="sqrt")
    raw = diagnose_head(q, k, rule="none")
    assert scaled.logit_std == pytest.approx(1.0, rel=tol)
    assert raw.logit_std == pytest.approx(8.0, rel=tol)
    assert raw.logit_std == pytest.approx(8.0 * scaled.logit_std, rel=1e-12)
    assert scaled.logit_std_theory == pytest.approx(1.0, rel=0.01)
    assert raw.logit_std_theory == pytest.approx(
        math.sqrt(d_k) * np.std(q) * np.std(k), rel=1e-12)
    # rho of independent q, k: sample correlation of batch·n·d_k pairs, std 1/√N.
    assert abs(scaled.rho) < 5.0 / math.sqrt(q.size)
    # The file's default scale (None) is 1/√d_k: the same as replaying sqrt.
    assert diagnose_head(q, k).logit_std == scaled.logit_std


@pytest.mark.parametrize("rho", [-0.6, 0.3, 0.9])
def test_rho_recovers_a_planted_correlation(rho: float) -> None:
    rng = np.random.default_rng(RNG_SEED)
    q = rng.standard_normal((2, 128, 32))
    k = rho * q + math.sqrt(1 - rho**2) * rng.standard_normal(q.shape)
    diag = diagnose_head(q, k)
    assert diag.rho == pytest.approx(rho, abs=5.0 * (1 - rho**2) / math.sqrt(q.size) + 1e-9)
    centred_q, centred_k = (a - a.mean(axis=1, keepdims=True) for a in (q, k))
    assert diag.rho == pytest.approx(
        np.corrcoef(centred_q.ravel(), centred_k.ravel())[0, 1], rel=1e-12)


# n = 600: float64 tiles of 109 rows, each computing only the keys its rows may see.
@pytest.mark.parametrize("n", [20, 600])
def test_causal_mask_counts_only_visible_logits(n: int) -> None:
    rng = np.random.default_rng(RNG_SEED)
    batch, d_k = 3, 8
    q = 2.0 * rng.standard_normal((batch, n, d_k))
    k = rng.standard_normal((batch, n, d_k))
    c = 0.7
    tri = np.tri(n, dtype=bool)
    logits = c * q @ k.swapaxes(1, 2)
    visible = logits[:, tri]
    masked = np.where(tri, logits, -np.inf)
    p = _softmax_rows(masked)
    logp = np.log(np.where(tri, p, 1.0))  # 0·ln 0 = 0
    diag = diagnose_head(q, k, scale=c, causal=True)
    assert diag.logit_std == pytest.approx(np.std(visible), rel=1e-12)
    assert diag.max_abs_logit == pytest.approx(np.max(np.abs(visible)), rel=1e-15)
    assert diag.entropy_mean == pytest.approx(np.mean(-np.sum(p * logp, axis=-1)), rel=1e-12)
    assert diag.p_max_mean == pytest.approx(np.mean(p.max(axis=-1)), rel=1e-12)
    assert diag.sink_mass == pytest.approx(np.mean(p[..., 0]), rel=1e-12)
    # Zhai et al.'s least entropy for row i's m = i + 1 visible logits of centred norm σ.
    m = np.tile(np.arange(1, n + 1), batch).astype(float)
    sigma = np.array([np.linalg.norm(logits[b, i, :i + 1] - logits[b, i, :i + 1].mean())
                      for b in range(batch) for i in range(n)])
    beta = np.exp(-sigma * np.sqrt(m / np.maximum(m - 1.0, 1.0)))
    bounds = np.where(m > 1, np.log1p((m - 1.0) * beta)
                      + sigma * np.sqrt(m * (m - 1.0)) * beta / (1.0 + (m - 1.0) * beta), 0.0)
    assert diag.entropy_floor_at_norm == pytest.approx(np.mean(bounds), rel=1e-10)
    # The mask changes what is counted: the full-matrix std differs.
    full = diagnose_head(q, k, scale=c)
    assert full.logit_std == pytest.approx(np.std(logits), rel=1e-12)
    assert full.logit_std != pytest.approx(diag.logit_std, rel=1e-6)
    # Row 0 sees only key 0: weight 1 there, counted in the means.
    assert diag.sink_mass >= 1.0 / n


@pytest.mark.parametrize(
    ("rule", "params"),
    [("none", {}), ("sqrt", {}), ("linear", {}), ("temperature", {"temperature": 3.0}),
     ("qk_norm", {"gain": 5.0}), ("qk_norm", {}), ("softcap", {"cap": 2.0}),
     # Under the causal mask each row of these has its own c, from the keys it sees.
     ("log_n", {}), ("ssmax", {})],
)
@pytest.mark.parametrize("causal", [False, True])
def test_replayed_rule_uses_the_engine_logits(rule: str, params: dict, causal: bool) -> None:
    rng = np.random.default_rng(RNG_SEED)
    q = 3.0 * rng.standard_normal((2, 24, 16))
    k = rng.standard_normal((2, 24, 16))
    logits = attention_logits(q, k, rule=rule, mask="causal" if causal else None, **params)
    visible = logits[np.isfinite(logits)]
    p = _softmax_rows(logits)
    diag = diagnose_head(q, k, rule=rule, causal=causal, scale=123.0, **params)  # scale ignored
    assert diag.rule == rule
    assert diag.logit_std == pytest.approx(np.std(visible), rel=1e-12)
    assert diag.max_abs_logit == pytest.approx(np.max(np.abs(visible)), rel=1e-14)
    assert diag.p_max_mean == pytest.approx(np.mean(p.max(axis=-1)), rel=1e-12)
    logp = np.log(np.where(p > 0.0, p, 1.0))  # 0·ln 0 = 0
    assert diag.entropy_mean == pytest.approx(np.mean(-np.sum(p * logp, axis=-1)), rel=1e-12)
    if rule == "softcap":
        assert diag.max_abs_logit <= params["cap"]


@pytest.mark.parametrize("causal", [False, True])
def test_diagnostics_do_not_depend_on_the_number_of_threads(causal: bool) -> None:
    """Tiles run on whichever thread is free; their sums are merged in tile order, so one
    thread and two give the same numbers, to the last bit."""
    rng = np.random.default_rng(RNG_SEED)
    q = rng.standard_normal((3, 1024, 16))
    k = rng.standard_normal((3, 1024, 16))
    old = parallel.get_num_threads()
    try:
        parallel.set_num_threads(1)
        serial = diagnose_head(q, k, causal=causal)
        parallel.set_num_threads(2)
        threaded = diagnose_head(q, k, causal=causal)
    finally:
        parallel.set_num_threads(old)
    assert parallel.parallel_pays(q.shape[0] * 1024 * 1024 * 16)  # the two runs differ
    assert threaded == serial


def test_bad_inputs_are_refused() -> None:
    q = np.zeros((1, 4, 3))
    with pytest.raises(ValueError, match="shape"):
        diagnose_head(q[0], q[0])
    with pytest.raises(ValueError, match="same shape"):
        diagnose_head(q, np.zeros((1, 5, 3)))
    with pytest.raises(ValueError, match="temperature"):
        diagnose_head(q, q, rule="temperature")
    with pytest.raises(ValueError, match="rule must be one of"):
        diagnose_head(q, q, rule="cubic")
    bad = q.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(ValueError, match="finite"):
        diagnose_head(bad, q)


# ---------------------------------------------------------------------------------------------
# The inspect command
# ---------------------------------------------------------------------------------------------


@dataclass
class _FakeTensorFile:
    """What load_tensors returns: layers, heads, geometry, scale, causal flag, tokens, meta."""

    q: np.ndarray  # (layers, heads, batch, n, d_k)
    k: np.ndarray
    layers: tuple[int, ...]
    scale: float
    causal: bool = False
    tokens: tuple[str, ...] | None = None
    meta: dict = field(default_factory=dict)
    kind: str = "qk"

    @property
    def heads(self) -> int:
        return self.q.shape[1]

    def layer_scale(self, layer: int) -> float:
        return self.scale

    def layer_cap(self, layer: int) -> float | None:
        return None

    @property
    def n(self) -> int:
        return self.q.shape[3]

    @property
    def d_k(self) -> int:
        return self.q.shape[4]

    def qk(self, layer: int, head: int) -> tuple[np.ndarray, np.ndarray]:
        i = self.layers.index(layer)
        return self.q[i, head], self.k[i, head]


def _fake_file(layers=(0, 3), heads=2, causal=False) -> _FakeTensorFile:
    rng = np.random.default_rng(RNG_SEED)
    shape = (len(layers), heads, 2, 16, 8)
    return _FakeTensorFile(rng.standard_normal(shape), rng.standard_normal(shape),
                           tuple(layers), scale=0.25, causal=causal)


def _run(monkeypatch, tf, *argv: str) -> int:
    monkeypatch.setattr(cli_inspect, "load_tensors", lambda path: tf)
    return inspect_command(build_parser().parse_args(["inspect", "model.npz", *argv]))


def test_inspect_writes_one_row_per_layer_and_head(tmp_path, monkeypatch, capsys) -> None:
    tf = _fake_file(causal=True)
    out = tmp_path / "report.csv"
    assert _run(monkeypatch, tf, "--out", str(out)) == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    required = {"layer", "head", "n", "d_k", "logit_std", "max_abs_logit", "entropy_mean",
                "p_max_mean", "saturated_share", "sink_mass", "rho", "flags",
                "logit_std_theory", "scale"}
    assert required <= set(rows[0]) and tuple(rows[0]) == COLUMNS
    assert [(int(r["layer"]), int(r["head"])) for r in rows] == [(0, 0), (0, 1), (3, 0), (3, 1)]
    expected = diagnose_head(*tf.qk(3, 1), scale=0.25, causal=True)
    assert float(rows[3]["logit_std"]) == expected.logit_std
    assert float(rows[3]["scale"]) == 0.25 and rows[3]["causal"] == "1"
    assert "inspect: 4/4 heads" in capsys.readouterr().err


def test_inspect_to_stdout_with_a_replayed_rule(monkeypatch, capsys) -> None:
    tf = _fake_file()
    assert _run(monkeypatch, tf, "--rule", "softcap", "--cap", "0.5", "--out", "-",
                "--quiet") == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    rows = list(csv.DictReader(io.StringIO(captured.out)))
    assert len(rows) == 4 and {r["rule"] for r in rows} == {"softcap"}
    assert all(float(r["max_abs_logit"]) <= 0.5 for r in rows)


def test_inspect_flags_are_joined_with_semicolons(monkeypatch, capsys) -> None:
    tf = _fake_file(layers=(1,), heads=1)
    tf.k[0, 0] = tf.q[0, 0]
    tf.k[0, 0, :, 0] = 40.0  # key 0 dominates every row: sink, and rows saturate
    tf.q[0, 0, :, :] = np.abs(tf.q[0, 0]) + 1.0
    assert _run(monkeypatch, tf, "--rule", "none", "--out", "-", "--quiet") == 0
    row = next(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert row["flags"] == "saturated;sink"


def test_inspect_errors_exit_2_with_one_line(tmp_path, monkeypatch, capsys) -> None:
    def broken(path):
        raise cli_inspect.TensorFileError(f"{path}: array 'layer0.k' has NaN values")

    monkeypatch.setattr(cli_inspect, "load_tensors", broken)
    args = build_parser().parse_args(["inspect", "bad.npz", "--out", str(tmp_path / "r.csv")])
    assert inspect_command(args) == 2
    err = capsys.readouterr().err
    assert err == "error: bad.npz: array 'layer0.k' has NaN values\n"

    # A replay parameter the engine refuses: one line, no traceback.
    assert _run(monkeypatch, _fake_file(), "--rule", "temperature", "--out", "-",
                "--quiet") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: temperature is required")
    assert err.count("\n") == 1 and "Traceback" not in err

    assert _run(monkeypatch, _fake_file(), "--out", str(tmp_path / "no" / "r.csv")) == 2
    assert "cannot write --out" in capsys.readouterr().err


def test_inspect_is_listed_in_the_help() -> None:
    help_text = build_parser().format_help()
    assert "inspect" in help_text
    with pytest.raises(SystemExit):
        build_parser().parse_args(["inspect", "f.npz", "--rule", "cubic", "--out", "-"])


def test_main_dispatches_inspect(monkeypatch, capsys) -> None:
    import main

    monkeypatch.setattr(cli_inspect, "load_tensors", lambda path: _fake_file(heads=3))
    assert main.main(["inspect", "model.npz", "--out", "-", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == ",".join(COLUMNS) and len(out.splitlines()) == 1 + 2 * 3


@pytest.mark.parametrize("suffix", [".npz", ".safetensors"])
def test_inspect_reads_a_real_file_end_to_end(tmp_path, capsys, suffix) -> None:
    """A file written by engine.io.tensors, read back by the real loader: every row equals
    diagnose_head on that head's arrays, with the file's own scale and causal mask."""
    from engine.io.tensors import load_tensors, write_tensors

    rng = np.random.default_rng(RNG_SEED)
    arrays = {f"layer{layer}.{part}": rng.standard_normal((2, 12, 8)).astype(np.float32)
              for layer in (0, 3) for part in ("q", "k")}
    path = tmp_path / f"heads{suffix}"
    write_tensors(path, arrays, meta={"scale": 0.5, "causal": True})
    out = tmp_path / "report.csv"
    import main

    assert main.main(["inspect", str(path), "--out", str(out), "--quiet"]) == 0
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [(int(r["layer"]), int(r["head"])) for r in rows] == [(0, 0), (0, 1), (3, 0), (3, 1)]
    tensors = load_tensors(path)
    for row in rows:
        q, k = tensors.qk(int(row["layer"]), int(row["head"]))
        expected = diagnose_head(q, k, scale=0.5, causal=True)
        assert float(row["scale"]) == 0.5 and row["causal"] == "1"
        # Every number is written as a plain float literal (repr of a Python float).
        for column in ("logit_std", "logit_std_theory", "max_abs_logit", "entropy_mean",
                       "entropy_uniform", "entropy_floor_at_norm", "p_max_mean",
                       "saturated_share", "sink_mass", "rho"):
            assert float(row[column]) == pytest.approx(getattr(expected, column), rel=1e-9)
            assert type(getattr(expected, column)) is float


def test_the_files_own_cap_equals_the_softcap_replay() -> None:
    """Without a rule, ``cap`` is the model's own soft-cap on c·q·kᵀ: at c = 1/√d_k it is
    exactly the soft-cap rule replayed with the same cap."""
    rng = np.random.default_rng(RNG_SEED)
    q, k = 3.0 * rng.standard_normal((2, 10, 16)), 3.0 * rng.standard_normal((2, 10, 16))
    own = diagnose_head(q, k, scale=0.25, cap=2.0, causal=True)
    replay = diagnose_head(q, k, rule="softcap", cap=2.0, causal=True)
    assert own.max_abs_logit <= 2.0 and own.rule is None
    for name in ("logit_std", "max_abs_logit", "entropy_mean", "p_max_mean", "sink_mass"):
        assert getattr(own, name) == pytest.approx(getattr(replay, name), rel=1e-12)
    uncapped = diagnose_head(q, k, scale=0.25, causal=True)
    assert uncapped.max_abs_logit > 2.0


def test_inspect_uses_each_layers_own_scale_and_cap(tmp_path) -> None:
    """``meta.layers`` gives a layer its own scale (and cap); the others keep the file's."""
    from engine.io.tensors import load_tensors, write_tensors

    rng = np.random.default_rng(RNG_SEED)
    arrays = {f"layer{layer}.{part}": rng.standard_normal((1, 6, 4))
              for layer in (0, 1, 2) for part in ("q", "k")}
    meta = {"scale": 0.5, "layers": {"1": {"name": "unscaled", "scale": 1.0},
                                     "2": {"cap": 0.75}}}
    path = write_tensors(tmp_path / "layers.npz", arrays, meta=meta)
    out = tmp_path / "report.csv"
    import main

    assert main.main(["inspect", str(path), "--out", str(out), "--quiet"]) == 0
    rows = {int(r["layer"]): r for r in csv.DictReader(out.open(encoding="utf-8"))}
    tf = load_tensors(path)
    assert [float(rows[layer]["scale"]) for layer in (0, 1, 2)] == [0.5, 1.0, 0.5]
    assert float(rows[1]["logit_std"]) == diagnose_head(*tf.qk(1, 0), scale=1.0).logit_std
    capped = diagnose_head(*tf.qk(2, 0), scale=0.5, cap=0.75)
    assert float(rows[2]["max_abs_logit"]) == capped.max_abs_logit <= 0.75


@pytest.mark.parametrize("causal", [False, True])
def test_a_head_of_one_token(causal: bool) -> None:
    """n = 1: one query, one key (no mask to apply): weight 1, entropy 0, the one logit."""
    q = np.array([[[1.0, 2.0]], [[0.5, -1.0]]])
    k = np.array([[[3.0, 1.0]], [[2.0, 2.0]]])
    diag = diagnose_head(q, k, scale=1.0, causal=causal, rule=None)
    assert (diag.n, diag.batch) == (1, 2)
    assert diag.p_max_mean == 1.0 and diag.entropy_mean == 0.0 == diag.entropy_floor_at_norm
    assert diag.sink_mass == 1.0 and diag.max_abs_logit == 5.0
    assert diag.logit_std == pytest.approx(np.std([5.0, -1.0]), rel=1e-15)
    replayed = diagnose_head(q, k, rule="ssmax", causal=causal)
    assert replayed.p_max_mean == 1.0
