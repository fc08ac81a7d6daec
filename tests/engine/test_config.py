"""engine.config: validation messages and the dict/JSON round trip, incl. corrupt input."""

from __future__ import annotations

import json

import pytest

from engine.config import (
    AttentionConfig,
    ScalingRule,
    SweepConfig,
    SweepParam,
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
        ({"gain": -1.0}, "gain must be in"),
    ],
)
def test_attention_config_validation(changes: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AttentionConfig(**changes)


def test_attention_config_derived_values() -> None:
    cfg = AttentionConfig(d_model=512, heads=8, link_heads=True, use_projection=True,
                          projection_std=512**-0.5)
    assert cfg.d_k == 64 and cfg.component_std == pytest.approx(1.0)
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
        ({"param": "s", "values": (-1.0,)}, r"values for s must be in \[0, 1e6\]"),
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
