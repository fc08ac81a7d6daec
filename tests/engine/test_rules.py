"""The rules' one declaration (engine.config.RULES): every place that decides what a rule is
follows it, the configs and the engine's calls share one range per parameter, and the docs'
rule table says what the declaration says."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pytest

from engine import scaled_dot_product_attention
from engine.analysis import head_weights, length, sweep_acc
from engine.config import (
    RULE_FIELDS,
    RULES,
    AttentionConfig,
    ScalingRule,
    SweepConfig,
    TrainConfig,
    rules_where,
)
from engine.config.base import POSITIVE_INT, Interval, check_int
from engine.config.rules import RULE_DEFAULTS
from engine.core import checks, theory
from engine.core.scaling import Rule
from engine.tour import backward, claims
from engine.training import model

ROOT = Path(__file__).resolve().parents[2]
NUMERICS = (ROOT / "docs" / "numerics.md").read_text(encoding="utf-8")


def test_every_rule_has_one_declaration_in_the_enums_order() -> None:
    assert list(RULES) == list(ScalingRule)
    assert all(rule.spec is RULES[rule] and rule.label == RULES[rule].name for rule in RULES)


def test_every_place_that_asks_whether_a_rule_is_scalar_asks_the_declaration() -> None:
    scalar = set(rules_where("scalar"))
    # YaRN's c is one number (the trainer once left it out and took the slow backward).
    assert ScalingRule.YARN in scalar and ScalingRule.SSMAX not in scalar
    assert model._SCALAR_RULES == scalar
    assert set(backward.SCALAR_RULES) == scalar
    assert set(claims._SCALAR_RULES) == {rule.value for rule in scalar}
    multiplicative = set(rules_where("multiplicative"))
    assert set(head_weights.MULTIPLICATIVE_RULES) == multiplicative
    assert set(sweep_acc.NONLINEAR_RULES) == set(ScalingRule) - multiplicative
    assert set(length.LENGTH_RULES) == set(rules_where("in_length_view"))


@pytest.mark.parametrize("rule", list(ScalingRule))
def test_the_declared_traits_are_what_the_engine_computes(rule: ScalingRule) -> None:
    """A scalar rule's logits are c·q·k with its one c; a per-row rule's c follows the keys
    each row sees; a rule free of d_k has c·√d_k the same at two d_k."""
    spec = RULES[rule]
    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal((6, 8)) for _ in range(3))
    kwargs = {"temperature": 2.0} if rule is ScalingRule.TEMPERATURE else {}
    res = scaled_dot_product_attention(q, k, v, rule=rule, mask="causal", **kwargs)
    scaling = Rule.from_keywords(rule, **kwargs)
    raw = q @ k.T
    keep = np.tril(np.ones((6, 6), dtype=bool))
    if spec.per_row:
        c = scaling.row_scales(8, np.arange(1, 7))[:, None]
    else:
        c = scaling.scale(8)
    if spec.multiplicative:
        np.testing.assert_allclose(res.logits[keep], (c * raw)[keep], rtol=1e-12)
    else:
        assert not np.allclose(res.logits[keep], (np.broadcast_to(c, (6, 1)) * raw)[keep])
    if spec.multiplicative and not spec.needs_d_k:
        at = [scaling.scale(d, 1000) * math.sqrt(d) for d in (16, 64)]
        assert at[0] == pytest.approx(at[1], rel=1e-14)
    if spec.per_row:
        assert scaling.scale(8, 10) != scaling.scale(8, 100_000)


def test_llama4_is_transformers_position_temperature() -> None:
    """transformers' Llama4TextAttention multiplies the query at position i by
    log1p(floor((i + 1)/floor_scale))·attn_scale + 1 before its 1/√d_k; row i of a causal mask
    sees i + 1 keys (with and without a small floor_scale L, so that c changes along n = 12)."""
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((12, 8)) for _ in range(3))
    for beta, floor in ((0.1, 8192.0), (0.1, 3.0), (0.7, 2.0)):
        res = scaled_dot_product_attention(q, k, v, rule="llama4", mask="causal",
                                           llama4_beta=beta, llama4_floor=floor)
        position = np.arange(12.0)
        temperature = np.log1p(np.floor((position + 1.0) / floor)) * beta + 1.0
        want = (q * temperature[:, None]) @ k.T / math.sqrt(8)
        keep = np.tril(np.ones((12, 12), dtype=bool))
        np.testing.assert_allclose(res.logits[keep], want[keep], rtol=1e-12)
    defaults = Rule("llama4")
    assert (defaults.llama4_beta, defaults.llama4_floor) == (0.1, 8192.0)
    at = defaults.row_scales(64, np.array([8191, 8192, 16384, 10**6])) * 8.0
    np.testing.assert_allclose(at, [1.0, 1 + 0.1 * math.log(2), 1 + 0.1 * math.log(3),
                                    1 + 0.1 * math.log(1 + 10**6 // 8192)], rtol=1e-14)


def test_a_rule_parameter_has_one_range_for_the_configs_and_the_engine() -> None:
    q = k = v = np.eye(4)
    # ssmax_s = 1e5 was accepted by the engine's call and refused by AttentionConfig.
    scaled_dot_product_attention(q, k, v, rule="ssmax", ssmax_s=1e5)
    assert AttentionConfig(ssmax_s=1e5).ssmax_s == 1e5
    for name, bad in (("ssmax_s", 0.0), ("cap", -1.0), ("gain", math.inf),
                      ("yarn_factor", 0.5), ("temperature", "hot")):
        messages = set()
        given = {name: bad}
        for make, extra in ((Rule, {"kind": "sqrt"}), (AttentionConfig, {}),
                            (SweepConfig, {"param": "d_k", "values": (8,)}), (TrainConfig, {})):
            if make is TrainConfig and name not in TrainConfig.FIELDS:
                continue  # the Train tab takes that rule's default
            with pytest.raises(ValueError) as caught:
                make(**extra, **given)
            messages.add(str(caught.value))
        assert len(messages) == 1, messages
        assert messages.pop().startswith(
            f"{name} must be {RULE_FIELDS[name].interval.requirement()}")


def test_one_positive_integer_check_with_its_messages() -> None:
    assert checks.check_dim("d_k", np.int64(3)) == 3
    for bad in (0, -2, 1.5, True, "3"):
        with pytest.raises(ValueError, match=r"d_k must be a positive integer \(>= 1\)"):
            checks.check_dim("d_k", bad)
    with pytest.raises(ValueError, match=r"n must be an integer >= 2, got 1"):
        theory.zhai_min_entropy(1, 1.0)
    assert check_int("n", 4.0) == 4  # JSON's integral floats
    assert check_int("n", 7, Interval(0, 7)) == 7
    with pytest.raises(ValueError, match=r"n must be in \[0, 6\], got 7"):
        check_int("n", 7, Interval(0, 6))
    assert 1 in POSITIVE_INT and 0 not in POSITIVE_INT


def test_an_interval_says_its_open_and_missing_ends() -> None:
    assert Interval(0.0, None, "neither").requirement() == "a positive finite number (> 0)"
    assert Interval(1.0, None).requirement() == ">= 1"
    assert Interval(0.0, 1.0, "right").requirement() == "in (0, 1]"
    assert 0.0 not in Interval(0.0, 1.0, "right") and 1.0 in Interval(0.0, 1.0, "right")
    assert 2.0 not in Interval(None, 2.0, "left") and 1.0 in Interval(None, 2.0, "left")


def _table(heading: str) -> list[list[str]]:
    """The rows of the first table under ``heading`` in docs/numerics.md, cells stripped."""
    section = NUMERICS.split(heading, 1)[1]
    block = re.search(r"((?:^\|.*\n)+)", section, re.MULTILINE)
    assert block is not None
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in block.group(1).splitlines()]
    return rows[2:]  # without the header and its rule


def expected_row(rule: ScalingRule) -> list[str]:
    """The docs' row of ``rule``, from its declaration."""
    spec = RULES[rule]
    shown = {name: "√d_k" if default is None else f"{default:g}"  # None: √d_k
             for name, default in RULE_DEFAULTS.items()}
    parameters = ", ".join(f"`{name}` {symbol} = {shown[name]}"
                           for name, symbol in spec.parameters) or "–"
    traits = ", ".join(word for word, has in (
        ("one c", spec.scalar), ("c per row", spec.per_row),
        ("not c·q·k", not spec.multiplicative)) if has)
    return [f"`{rule.value}`", spec.name, spec.formula, parameters, traits, spec.source]


def test_the_docs_rule_table_is_the_declaration() -> None:
    expected = [expected_row(rule) for rule in ScalingRule]
    shown = "\n".join("| " + " | ".join(row) + " |" for row in expected)
    assert _table("## Scaling rules") == expected, f"docs/numerics.md should read:\n{shown}"


def test_the_readmes_list_of_rules_is_the_declaration() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"when another rule \((.*?): \[the rule table\]", readme, re.DOTALL)
    assert listed is not None
    labels = [label.strip() for label in listed.group(1).split(",")]
    assert labels == [rule.label for rule in ScalingRule if rule.label not in ("none", "1/√d_k")]
