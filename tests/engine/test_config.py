"""engine.config: validation messages, the dict/JSON round trip (incl. corrupt input) and the
field declarations the panels and CLI options are generated from."""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from pathlib import Path

import pytest

from engine.config import (
    ATTENTION_FIELDS,
    RULE_PARAMETERS,
    SWEEP_FIELDS,
    TRAIN_FIELDS,
    AttentionConfig,
    ScalingRule,
    SweepConfig,
    SweepParam,
    TrainConfig,
    config_from_dict,
    config_from_json,
)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"n_tokens": 0}, r"n_tokens must be in \[1, 8192\], got 0"),
        ({"d_k": 1.5}, "d_k must be an integer"),
        ({"heads": True}, "heads must be an integer"),
        ({"init_std": float("nan")}, "init_std must be finite"),
        ({"rho": 1.5}, r"rho must be in \[-1, 1\]"),
        ({"rule": "cube"}, "rule must be one of none, sqrt, linear"),
        ({"mask": "future"}, "mask must be one of none, causal"),
        ({"d_model": 10, "heads": 3}, r"d_model \(10\) must be divisible by heads \(3\)"),
        ({"query_row": 64}, r"query_row must be in \[0, 63\]"),
        ({"use_projection": 1}, "use_projection must be true or false"),
        ({"gain": -1.0}, r"gain must be a positive finite number \(> 0\), got -1.0"),
        ({"yarn_factor": 0.5}, "yarn_factor must be >= 1, got 0.5"),
    ],
)
def test_attention_config_validation(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AttentionConfig(**changes)


def test_attention_config_derived_values() -> None:
    cfg = AttentionConfig(d_model=512, heads=8, link_heads=True, use_projection=True,
                          projection_std=512**-0.5)
    assert cfg.d_k == 64
    assert AttentionConfig(d_k=3.0).d_k == 3  # integral floats from JSON are accepted
    assert cfg.replace(rule="linear").rule is ScalingRule.LINEAR
    with pytest.raises(ValueError, match="n_tokens"):
        cfg.replace(n_tokens=-1)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"values": ()}, "values must hold at least one value"),
        ({"rules": ()}, "rules must name at least one"),
        ({"rules": ("sqrt", "nope")}, "rules must be one of"),
        ({"values": (0,)}, r"d_k must be in \[1, 8192\]"),
        ({"param": "s", "values": (-1.0,)}, r"values for s must be in \[0, 1e\+06\]"),
        ({"param": "rho", "values": (2.0,)}, "rho must be in"),
        ({"param": "width"}, "param must be one of d_k, s, rho, n"),
        ({"memory_budget_bytes": 0}, "memory_budget_bytes must be a positive integer"),
        ({"samples": 0}, "samples must be in"),
    ],
)
def test_sweep_config_validation(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SweepConfig(**changes)


@pytest.mark.parametrize(
    "cfg",
    [
        AttentionConfig(),
        AttentionConfig(rule="qk_norm", gain=3.0, mask="causal", rho=-0.25, seed=7),
        SweepConfig(),
        SweepConfig(param="s", values=(0.5, 1.0), rules=("softcap",), temperature=2.0),
    ],
)
def test_round_trip_dict_and_json(cfg) -> None:
    assert type(cfg).from_dict(cfg.to_dict()) == cfg
    assert type(cfg).from_json(cfg.to_json()) == cfg
    assert config_from_json(cfg.to_json()) == cfg
    assert config_from_dict(json.loads(cfg.to_json())) == cfg
    data = json.loads(cfg.to_json())
    assert data["kind"] == cfg.kind
    if isinstance(cfg, SweepConfig):
        assert SweepConfig.from_json(cfg.to_json()).param is SweepParam(data["param"])
    # A session file lists the rule parameters after the rule, as the panel does.
    assert list(data)[1:] == list(cfg.FIELDS)


def test_a_view_sweep_carries_every_rule_parameter_of_the_explorer() -> None:
    attention = AttentionConfig(temperature=2.0, gain=5.0, cap=7.0, ssmax_s=0.9, yarn_factor=16.0)
    sweep = SweepConfig.following(attention, param=SweepParam.D_K, values=(16,),
                                  rules=(ScalingRule.SQRT,), samples_cap=100)
    assert [getattr(sweep, name) for name in RULE_PARAMETERS] == [
        getattr(attention, name) for name in RULE_PARAMETERS]
    assert (sweep.temperature, sweep.yarn_factor) == (2.0, 16.0)


def test_corrupt_and_foreign_json_is_refused_with_clear_messages() -> None:
    with pytest.raises(ValueError, match="not valid JSON"):
        AttentionConfig.from_json("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        config_from_json("")
    with pytest.raises(ValueError, match="must be an object"):
        AttentionConfig.from_json("[1, 2]")
    with pytest.raises(ValueError, match="expected a 'attention' config, got kind 'sweep'"):
        AttentionConfig.from_json(SweepConfig().to_json())
    with pytest.raises(ValueError, match="unknown attention field"):
        AttentionConfig.from_dict({"kind": "attention", "colour": "red"})
    with pytest.raises(ValueError, match="unknown config kind 'pizza'"):
        config_from_json('{"kind": "pizza"}')
    with pytest.raises(ValueError, match="'kind' field"):
        config_from_json('{"d_k": 4}')
    with pytest.raises(ValueError, match="n_tokens must be"):
        AttentionConfig.from_json('{"kind": "attention", "n_tokens": "many"}')


def test_train_config_loads_by_kind_without_importing_the_trainer_first():
    import subprocess
    import sys

    code = (
        "from engine.config import config_from_dict;"
        "c = config_from_dict({'kind': 'train', 'd_k': 16});"
        "print(type(c).__name__, c.d_k)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=__import__("pathlib").Path(__file__).resolve().parents[2])
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["TrainConfig", "16"]


# -- the field declarations ------------------------------------------------------------------
CONFIG_CLASSES = (AttentionConfig, SweepConfig, TrainConfig)


@pytest.mark.parametrize("cls", CONFIG_CLASSES, ids=lambda cls: cls.__name__)
def test_every_field_is_declared_once_with_a_consistent_range(cls) -> None:
    names = [field.name for field in dataclasses.fields(cls)]
    assert sorted(cls.FIELDS) == sorted(names)
    for name, field in cls.bound().items():
        spec = field.spec
        if field.kind in (int, float) and name != "memory_budget_bytes":  # checked by its class
            assert spec.low is not None, name  # a rule parameter may have no upper end
            assert spec.high is None or spec.low < spec.high, name
            if field.default is not None:
                assert field.default in spec.interval, name
        if spec.gui is not None and spec.gui.widget in ("slider", "spin", "log_spin"):
            low, high = field.gui_range  # a panel may narrow the engine's range, never widen it
            assert low in spec.interval and high in spec.interval and low < high, name
            if field.default is not None and name != "query_row":
                assert low <= field.default <= high, name
        if spec.gui is not None and spec.gui.choices is not None:
            assert list(spec.gui.choices) == list(field.kind), name


def test_a_quantity_shared_by_configs_has_one_engine_range() -> None:
    # d_k: the engine accepts 1..8192 in every config; the Train panel shows 1..1024 (training
    # a d_k 1024 model takes minutes per run), the explorer the full range.
    for name in ("n_tokens", "d_k", "rho", "samples", "seed", "temperature", "gain", "cap"):
        spec = ATTENTION_FIELDS[name]
        assert (SWEEP_FIELDS[name].low, SWEEP_FIELDS[name].high) == (spec.low, spec.high)
    for name in ("d_k", "d_model", "heads", "seed", "init_std", "temperature", "gain", "cap"):
        spec = ATTENTION_FIELDS[name]
        assert (TRAIN_FIELDS[name].low, TRAIN_FIELDS[name].high) == (spec.low, spec.high)
    assert (ATTENTION_FIELDS["d_k"].low, ATTENTION_FIELDS["d_k"].high) == (1, 8192)
    assert AttentionConfig.bound()["d_k"].gui_range == (1, 8192)
    assert TrainConfig.bound()["d_k"].gui_range == (1, 1024)


def _range_cases():
    for cls in CONFIG_CLASSES:
        for name, field in cls.bound().items():
            if field.kind in (int, float) and name not in ("query_row", "memory_budget_bytes"):
                yield pytest.param(cls, name, field, id=f"{cls.__name__}.{name}")


@pytest.mark.parametrize(("cls", "name", "field"), list(_range_cases()))
def test_validation_comes_from_the_declared_range(cls, name, field) -> None:
    interval = field.spec.interval
    low, high = interval.low, interval.high
    required = re.escape(f"{name} must be {interval.requirement(field.kind is int)}")
    outside = [low - 1] + ([high + 1 if field.kind is int else high * 2 + 1] if high else [])
    if interval.closed in ("right", "neither"):
        outside.append(low)  # an open end refuses the end itself
    for value in outside:
        with pytest.raises(ValueError, match=required):
            cls(**{name: value})
    others = {"n": 2} if name == "vocab" else {}  # retrieval needs vocab >= n
    inside = low if low in interval else low + 1e-9
    assert getattr(cls(**{name: inside}, **others), name) == inside


def test_config_modules_import_each_other_without_a_circle() -> None:
    """attention/sweep/train/registry form a chain (no lazy import breaks a cycle)."""
    folder = Path(__file__).resolve().parents[2] / "engine" / "config"
    graph: dict[str, set[str]] = {}
    for path in folder.glob("*.py"):
        module = f"engine.config.{path.stem}" if path.stem != "__init__" else "engine.config"
        graph[module] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine."):
                graph[module].add(node.module)  # type: ignore[arg-type]
            elif isinstance(node, ast.Import):
                graph[module] |= {a.name for a in node.names if a.name.startswith("engine.")}
    assert "engine.config.train" not in graph["engine.config.attention"]

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        for nxt in graph.get(start, ()):
            if nxt == goal or (nxt not in seen and reaches(nxt, goal, seen | {nxt})):
                return True
        return False

    cycles = [m for m in graph if m != "engine.config" and reaches(m, m, set())]
    assert cycles == []
