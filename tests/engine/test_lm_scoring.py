"""score_text and iter_sweep on tiny models: what an intervention changes and what it must not."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.core.scaling import Rule
from engine.models import (
    DEFAULT_ALPHAS,
    CaptureCancelled,
    Intervention,
    Model,
    iter_sweep,
    open_model,
    score_text,
)
from engine.models.forward import Pass
from tests.engine.lm_models import FIXTURES, TEXT


@pytest.fixture(scope="module")
def gemma() -> Model:
    return open_model(FIXTURES / "tiny-gemma2-sw")


def _same(a, b) -> None:
    assert a.token_ids == b.token_ids
    np.testing.assert_array_equal(a.token_losses, b.token_losses)
    np.testing.assert_array_equal(a.layer_entropy, b.layer_entropy)
    np.testing.assert_array_equal(a.layer_saturated, b.layer_saturated)


def test_the_default_alpha_grid_runs_from_an_eighth_to_eight_with_one_in_the_middle() -> None:
    assert len(DEFAULT_ALPHAS) == 13 and DEFAULT_ALPHAS[6] == 1.0
    assert DEFAULT_ALPHAS[0] == 0.125 and DEFAULT_ALPHAS[-1] == 8.0
    assert np.allclose(np.diff(np.log2(DEFAULT_ALPHAS)), 0.5)


def test_the_loss_is_the_mean_negative_log_likelihood_of_the_next_tokens(llama: Model) -> None:
    """The losses computed here from the model's own stream and head, in float64."""
    score = score_text(llama, TEXT, top_k=3)
    ids = np.array(score.token_ids)
    run = Pass(llama.spec, llama.lm_store(), llama._names)
    x = run.embed(ids)
    for i in range(llama.spec.layers):
        x = run.layer(i, x)
    head = llama.lm_head()
    z = head.logits(head.hidden(x)).astype(np.float64)
    logp = z - z.max(axis=1, keepdims=True)
    logp -= np.log(np.exp(logp).sum(axis=1, keepdims=True))
    want = -logp[np.arange(len(ids) - 1), ids[1:]]
    np.testing.assert_allclose(score.token_losses, want, rtol=1e-6)
    assert score.loss == pytest.approx(want.mean(), rel=1e-9)
    assert score.perplexity == pytest.approx(math.exp(score.loss))
    assert len(score.predictions) == len(ids) and all(len(p) == 3 for p in score.predictions)
    best = score.predictions[2][0]
    assert best.token_id == int(np.argmax(z[2]))
    assert best.probability == pytest.approx(math.exp(logp[2, best.token_id]), rel=1e-6)
    assert not score.nonfinite and not score.token_losses.flags.writeable


def test_alpha_one_anywhere_is_the_model_itself(llama: Model) -> None:
    base = score_text(llama, TEXT)
    for intervention in (Intervention(alpha=1.0, layers=(1,)), Intervention(heads=(0, 2))):
        assert intervention.is_identity
        _same(score_text(llama, TEXT, intervention), base)
    # the model's own rule given as a replacement: the same numbers by the rule's path
    same = score_text(llama, TEXT, Intervention(rule=Rule("sqrt")))
    np.testing.assert_allclose(same.token_losses, base.token_losses, rtol=1e-5)


def test_alpha_changes_the_loss_and_sharpens_attention(llama: Model) -> None:
    base = score_text(llama, TEXT)
    sharp = score_text(llama, TEXT, Intervention(alpha=8.0))
    flat = score_text(llama, TEXT, Intervention(alpha=0.125))
    assert sharp.loss != base.loss and flat.loss != base.loss
    assert (sharp.layer_entropy < base.layer_entropy).all()
    assert (flat.layer_entropy > base.layer_entropy).all()
    assert (sharp.layer_saturated >= base.layer_saturated).all()


@pytest.mark.parametrize("rule", [None, Rule("linear"), Rule("softcap", cap=2.0)])
def test_choosing_every_head_is_choosing_the_layer(gemma: Model, rule: Rule | None) -> None:
    heads = tuple(range(gemma.spec.heads))
    layer = score_text(gemma, TEXT, Intervention(alpha=4.0, rule=rule, layers=(1,)))
    every = score_text(gemma, TEXT, Intervention(alpha=4.0, rule=rule, layers=(1,), heads=heads))
    np.testing.assert_allclose(every.token_losses, layer.token_losses, rtol=1e-6)
    np.testing.assert_allclose(every.layer_entropy, layer.layer_entropy, rtol=1e-6)


def test_a_head_subset_changes_less_than_the_whole_layer(gemma: Model) -> None:
    base = score_text(gemma, TEXT)
    one = score_text(gemma, TEXT, Intervention(alpha=8.0, layers=(0,), heads=(1,)))
    assert one.loss != base.loss
    assert abs(one.layer_entropy[0] - base.layer_entropy[0]) > 0


@settings(max_examples=8, deadline=None)
@given(layer=st.integers(0, 2), alpha=st.floats(0.05, 20.0),
       precision=st.sampled_from(["float32", "float16", "bfloat16"]))
def test_an_intervention_leaves_the_layers_before_it_bit_identical(
        gemma: Model, layer: int, alpha: float, precision: str) -> None:
    base = score_text(gemma, TEXT)
    changed = score_text(gemma, TEXT, Intervention(alpha=alpha, layers=(layer,),
                                                    precision=precision))
    np.testing.assert_array_equal(changed.layer_entropy[:layer], base.layer_entropy[:layer])
    np.testing.assert_array_equal(changed.layer_saturated[:layer],
                                  base.layer_saturated[:layer])


@pytest.mark.parametrize("count", [1, 2, 3], ids=["1-thread", "2-threads", "3-threads"])
@pytest.mark.parametrize("kind", ["alpha", "layer", "head"])
def test_sweep_points_equal_single_scores(gemma: Model, kind: str, threads, count) -> None:
    """On several threads the points run side by side, each on one thread: the same bits."""
    threads(count)
    callers: set[int] = set()

    def cancelled() -> bool:
        callers.add(threading.get_ident())
        return False

    points = list(iter_sweep(gemma, TEXT, kind, alphas=(0.5, 1.0, 3.0), alpha=5.0, layer=1,
                             layers=(1, 2), cancelled=cancelled))
    # the points' threads (each polls between its layers; a pool thread may take any wave)
    assert (len(callers) > 1) == (count > 1)
    threads(1)
    total = {"alpha": 3, "layer": gemma.spec.layers, "head": gemma.spec.heads}[kind]
    assert [p.index for p in points] == list(range(total))
    assert all(p.total == total and p.kind == kind for p in points)
    for point in points:
        if kind == "alpha":
            want = Intervention(alpha=point.alpha, layers=(1, 2))
            assert point.layer is None and point.head is None
        elif kind == "layer":
            want = Intervention(alpha=5.0, layers=(point.index,))
            assert point.layer == point.index and point.head is None
        else:
            want = Intervention(alpha=5.0, layers=(1,), heads=(point.index,))
            assert point.layer == 1 and point.head == point.index
        assert point.score.intervention == want
        _same(point.score, score_text(gemma, TEXT, want))


@pytest.mark.parametrize("count", [1, 2, 3], ids=["1-thread", "2-threads", "3-threads"])
def test_the_layer_sweep_runs_the_layers_before_each_point_once(gemma: Model, threads,
                                                                 count) -> None:
    """Point L runs layers L … last; the model's own layers before it are not run again
    (each is carried on with the q, k and v of the point that intervenes on it, also when
    the next point runs beside it and waits for that)."""
    threads(count)
    runs: list[int] = []
    layers = gemma.spec.layers
    list(iter_sweep(gemma, TEXT, "layer", prefix_runs=runs.append))
    assert runs == [layers * (layers + 1) // 2]  # not layers² as without the prefix
    runs.clear()
    list(iter_sweep(gemma, TEXT, "alpha", layers=(2,), prefix_runs=runs.append))
    assert runs == [2 + 13]  # layers 0 and 1 once, then layer 2 for each of 13 points


def test_the_layer_sweep_defaults_to_no_scaling(llama: Model) -> None:
    point = next(iter_sweep(llama, TEXT, "layer"))
    assert point.alpha == pytest.approx(math.sqrt(llama.spec.head_dim))
    assert point.score.intervention.label() == "α = 2.828 · layer 0"


@pytest.mark.parametrize("count", [1, 2], ids=["1-thread", "2-threads"])
def test_cancelling_mid_sweep_keeps_the_points_already_yielded(gemma: Model, threads,
                                                               count) -> None:
    threads(count)
    done: list = []
    with pytest.raises(CaptureCancelled):
        for point in iter_sweep(gemma, TEXT, cancelled=lambda: len(done) >= 2):
            done.append(point)
    assert len(done) == 2
    for point in done:
        _same(point.score, score_text(gemma, TEXT, Intervention(alpha=point.alpha)))


@pytest.mark.parametrize("kind", ["alpha", "layer"])
def test_a_point_cancelled_beside_a_finished_one_comes_after_it(gemma: Model, threads,
                                                                 kind: str) -> None:
    """Two points side by side: the first runs to its end, the second stops inside; the
    first is yielded, then the cancel is raised."""
    threads(2)
    second = threading.Event()

    def cancelled() -> bool:
        if threading.current_thread() is threading.main_thread():
            return False  # the first point, on the caller's thread
        second.set()
        return True

    done: list = []
    with pytest.raises(CaptureCancelled):
        for point in iter_sweep(gemma, TEXT, kind, alphas=(0.5, 3.0), alpha=5.0,
                                cancelled=cancelled):
            done.append(point)
    assert second.is_set() and [p.index for p in done] == [0]
    want = Intervention(alpha=0.5) if kind == "alpha" else Intervention(alpha=5.0, layers=(0,))
    _same(done[0].score, score_text(gemma, TEXT, want))


def test_cancelling_inside_a_point_stops_it() -> None:
    model = open_model(FIXTURES / "tiny-gemma2")
    calls = []

    def cancelled() -> bool:
        calls.append(1)
        return len(calls) > 5

    with pytest.raises(CaptureCancelled):
        score_text(model, TEXT, cancelled=cancelled)


def test_labels_name_the_change_and_where(llama: Model) -> None:
    assert Intervention().label() == "the model's own scale"
    assert Intervention(alpha=8.0).label() == "α = 8 · all layers"
    assert Intervention(alpha=0.125, layers=(0,)).label() == "α = 1/8 · layer 0"
    assert Intervention(rule=Rule("linear"), layers=(3, 4)).label() == "1/d_k · layers 3, 4"
    assert (Intervention(alpha=2.0, layers=(1,), heads=(0, 2), precision="float16",
                         softmax="naive").label()
            == "α = 2 · layer 1, heads 0, 2 · float16 (naive softmax)")


def test_rounding_the_softmax_to_float16_without_its_shift_overflows(llama: Model) -> None:
    """A naive float16 softmax overflows once a logit passes ln 65504 ≈ 11.1: α = 64 on the
    tiny Llama's 1/√8 logits gets there, the stable one does not."""
    naive = score_text(llama, TEXT, Intervention(alpha=64.0, precision="float16",
                                                  softmax="naive"))
    stable = score_text(llama, TEXT, Intervention(alpha=64.0, precision="float16"))
    assert naive.nonfinite and math.isnan(naive.loss) and math.isnan(naive.perplexity)
    assert not stable.nonfinite
    exact = score_text(llama, TEXT, Intervention(alpha=64.0))
    assert stable.loss == pytest.approx(exact.loss, rel=2e-2)
    for precision in ("bfloat16", "float8_e4m3fn", "float8_e5m2"):
        rounded = score_text(llama, TEXT, Intervention(precision=precision))
        assert np.isfinite(rounded.loss) and rounded.loss != exact.loss


@pytest.mark.parametrize("rule", [Rule("none"), Rule("linear"), Rule("temperature",
                                                                      temperature=2.0),
                                  Rule("qk_norm", gain=3.0), Rule("softcap", cap=1.0),
                                  Rule("log_n"), Rule("ssmax"), Rule("yarn"),
                                  Rule("llama4", llama4_floor=4.0)])
def test_every_explorer_rule_can_replace_the_models_scale(gemma: Model, rule: Rule) -> None:
    score = score_text(gemma, TEXT, Intervention(rule=rule))
    assert np.isfinite(score.loss)
    if rule.kind.value == "none":  # c = 1 is α = √d_k without the model's own soft-cap
        alpha = math.sqrt(gemma.spec.head_dim)
        assert score.loss != score_text(gemma, TEXT, Intervention(alpha=alpha)).loss


def test_progress_counts_the_layers_then_the_head(llama: Model) -> None:
    steps: list[tuple[int, int]] = []
    score_text(llama, TEXT, progress=lambda *step: steps.append(step))
    assert steps == [(1, 3), (2, 3), (3, 3)]
    steps.clear()
    score_text(llama, TEXT, Intervention(alpha=2.0, layers=(1,)),
               progress=lambda *step: steps.append(step))
    assert steps[-1] == (3, 3) and [done for done, _ in steps] == sorted(done for done, _ in steps)


@pytest.mark.parametrize("extra", [0, 1], ids=["one-fits", "two-fit"])
def test_points_run_side_by_side_only_as_far_as_the_memory_budget_holds_them(
        gemma: Model, threads, extra: int) -> None:
    threads(2)
    n = len(score_text(gemma, TEXT).token_ids)
    budget = gemma.lm_bytes(n, budget=1 << 30)
    budget = gemma.lm_bytes(n, budget=budget) + extra * gemma.lm_run_bytes(n)
    callers: set[int] = set()

    def cancelled() -> bool:
        callers.add(threading.get_ident())
        return False

    list(iter_sweep(gemma, TEXT, alphas=(0.5, 3.0), memory_budget=budget, cancelled=cancelled))
    assert len(callers) == 1 + extra
