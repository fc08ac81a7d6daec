"""``python main.py intervene``: change a real model's attention scale and write its loss (no Qt).

Every number comes from the engine: :func:`engine.models.iter_sweep` (or
:func:`engine.models.score_text` per α when the intervention is limited to some heads) and
:func:`engine.models.continue_text`. This module reads the options, checks them before the
model runs (with the engine's own checks: :class:`~engine.models.Intervention`,
:func:`~engine.models.layers_text`, :meth:`Rule.from_keywords`), streams the points into the
output file and prints where the loss is least.

Every refusal is one line on stderr and exit status 2. The file is written beside ``--out`` and
renamed onto it at the end; Ctrl-C during the sweep keeps the points already done (exit 130).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from engine.cli.capture import memory_size, read_text_file
from engine.cli.intervene_output import CsvPoints, JsonPoints, PointSink, summary_line
from engine.cli.options import RULE_OPTIONS, rule_from_options, with_option_name
from engine.cli.output import interrupted, refused, write_streamed
from engine.cli.progress import Progress
from engine.cli.sweep import parse_values
from engine.core.memory import MemoryBudgetError, get_memory_budget, set_memory_budget
from engine.core.scaling import Rule
from engine.io.files import check_output_not_input
from engine.models import (
    DEFAULT_ALPHAS,
    Intervention,
    Model,
    SweepPoint,
    continue_text,
    iter_sweep,
    layers_text,
    open_model,
    score_text,
)
from engine.models.capture import UNFORESEEN_ERRORS, unforeseen

__all__ = ["Plan", "intervene_command", "plan_of", "run_points"]

#: The option setting each of Intervention's fields that its messages name.
_ENGINE_OPTIONS = {"precision": "--dtype", "softmax": "--softmax"}


@dataclass(frozen=True)
class Plan:
    """What to compute, every value checked against the model."""

    kind: str                          # "alpha" | "layer" | "head"
    alphas: tuple[float, ...]          # the "alpha" sweep's points
    alpha: float | None                # the α of a "layer" or "head" sweep (None: √d_k)
    layer: int                         # the "head" sweep's layer
    layers: tuple[int, ...] | None     # the "alpha" sweep's layers (None: all)
    heads: tuple[int, ...] | None      # the "alpha" sweep's heads (None: all)
    rule: Rule | None
    precision: str
    softmax: str
    top_k: int
    max_tokens: int | None
    continue_tokens: int

    def total(self, model: Model) -> int:
        """The number of points of the sweep."""
        return {"alpha": len(self.alphas), "layer": model.spec.layers,
                "head": model.spec.heads}[self.kind]

    def intervention(self, alpha: float) -> Intervention:
        """The "alpha" sweep's intervention at ``alpha``."""
        return Intervention(alpha=alpha, rule=self.rule, layers=self.layers, heads=self.heads,
                            precision=self.precision, softmax=self.softmax)


def _rule(args: argparse.Namespace) -> Rule | None:
    if args.rule is not None:
        return rule_from_options(args)
    given = [option for name, option in RULE_OPTIONS.items()
             if getattr(args, name, None) is not None]
    if given:
        raise ValueError(f"{given[0]} sets a parameter of --rule: give --rule too")
    return None


def _one_alpha(args: argparse.Namespace) -> float | None:
    if args.alphas is None:
        return None
    values = parse_values(args.alphas, "--alphas")
    if len(values) != 1:
        raise ValueError(f"--alphas {args.alphas!r}: --sweep {args.sweep} applies one α to "
                         "each of its points; give one value")
    return values[0]


def _refuse(args: argparse.Namespace, option: str, why: str) -> None:
    if getattr(args, option.removeprefix("--").replace("-", "_")) is not None:
        raise ValueError(f"{option}: --sweep {args.sweep} {why}; leave {option} out")


def plan_of(args: argparse.Namespace, model: Model) -> Plan:
    """The :class:`Plan` of the options ``args`` for ``model``.

    Raises
    ------
    ValueError
        One line naming the option: an α that is not a positive finite number, a layer or a
        head the model does not have, a rule parameter out of range, an option the sweep does
        not take.
    """
    spec = model.spec
    kind = args.sweep
    alphas: tuple[float, ...] = DEFAULT_ALPHAS
    alpha, layer, layers, heads = None, 0, None, None
    if kind == "alpha":
        if args.alphas is not None:
            alphas = parse_values(args.alphas, "--alphas")
        if args.layers is not None:
            layers = tuple(layers_text(args.layers, spec.layers))
        if args.heads is not None:
            heads = tuple(layers_text(args.heads, spec.heads, what="head"))
    else:
        alpha = _one_alpha(args)
        _refuse(args, "--heads", "intervenes on each head in turn" if kind == "head"
                else "intervenes on every head of each layer")
        if kind == "layer":
            _refuse(args, "--layers", "intervenes on each layer in turn")
        elif args.layers is not None:
            chosen = layers_text(args.layers, spec.layers)
            if len(chosen) != 1:
                raise ValueError(f"--layers {args.layers!r}: --sweep head runs the heads of one "
                                 "layer; give one layer")
            layer = chosen[0]
    plan = Plan(kind=kind, alphas=alphas, alpha=alpha, layer=layer, layers=layers, heads=heads,
                rule=_rule(args), precision=args.dtype, softmax=args.softmax,
                top_k=args.top_k, max_tokens=args.max_tokens,
                continue_tokens=args.continue_tokens)
    # The engine's own checks, before the model runs: α > 0 and finite, the format, the
    # softmax, the layers and heads.
    for value in (alphas if kind == "alpha" else (1.0 if alpha is None else alpha,)):
        try:
            plan.intervention(value).check(spec.layers, spec.heads)
        except ValueError as exc:  # named by the option typed: "--dtype must be one of …"
            message = f"--alphas: {exc}" if str(exc).startswith("α ") else str(exc)
            raise ValueError(with_option_name(message, _ENGINE_OPTIONS)) from None
    return plan


def run_points(model: Model, text: str, plan: Plan) -> Iterator[SweepPoint]:
    """The sweep's points, each as soon as the engine has it."""
    if plan.kind == "alpha" and plan.heads is not None:
        # iter_sweep's "alpha" sweep intervenes on whole layers: chosen heads are scored
        # point by point.
        total = len(plan.alphas)
        for index, alpha in enumerate(plan.alphas):
            score = score_text(model, text, plan.intervention(alpha), top_k=plan.top_k,
                               max_tokens=plan.max_tokens)
            yield SweepPoint(kind="alpha", index=index, total=total, alpha=alpha, layer=None,
                             head=None, score=score)
        return
    yield from iter_sweep(model, text, plan.kind, alphas=plan.alphas, alpha=plan.alpha,
                          layer=plan.layer, layers=plan.layers, rule=plan.rule,
                          precision=plan.precision, softmax=plan.softmax, top_k=plan.top_k,
                          max_tokens=plan.max_tokens)


def _check_out(args: argparse.Namespace) -> str:
    """``"csv"`` or ``"json"``: the format ``--out`` names."""
    if args.out == "-":
        return "csv"
    suffix = Path(args.out).suffix.lower()
    if suffix not in (".csv", ".json"):
        raise ValueError(f"--out {args.out!r}: name a .csv or .json file ('-': CSV on stdout)")
    check_output_not_input(args.out, [args.model, args.text_file])
    return suffix[1:]


def _run(model: Model, text: str, plan: Plan, sink: PointSink, progress: Progress) -> None:
    """Compute the points and continuations into ``sink`` (it keeps what is done when this
    raises KeyboardInterrupt)."""
    total = plan.total(model)
    steps = 2 * total + 1 if plan.continue_tokens else total  # at most, with continuations

    def continued(intervention: Intervention, done: int) -> None:
        progress.update(done / steps, f"continuing under {intervention.label()}")
        sink.add_continuation(continue_text(model, text, intervention,
                                            max_new_tokens=plan.continue_tokens,
                                            max_tokens=plan.max_tokens))

    if plan.continue_tokens:
        # The model's own first: the engine refuses a model that cannot continue (BERT), a
        # token count out of range or a text that leaves no room before the sweep runs.
        continued(Intervention(), 0)
    for done, point in enumerate(run_points(model, text, plan), 1):
        sink.add(point)
        progress.update(done / steps, f"{done}/{total} points: {point.score.intervention.label()}"
                        f", loss {point.score.loss:.4g}", done=done == steps)
    if not plan.continue_tokens:
        return
    changed = [p.score.intervention for p in sink.points if not p.score.intervention.is_identity]
    for done, intervention in enumerate(changed, total + 1):
        continued(intervention, done)
    progress.update(1.0, f"{total} points, {len(changed) + 1} continuations", done=True)


def _header(model: Model, text: str, plan: Plan) -> dict[str, object]:
    """What the JSON file says before its points: the model, the text, the settings."""
    return {"command": "intervene", "model": model.name, "path": str(model.path),
            "architecture": model.spec.architecture, "text": text, "sweep": plan.kind,
            "rule": None if plan.rule is None else plan.rule.kind.value,
            "dtype": plan.precision, "softmax": plan.softmax, "top_k": plan.top_k,
            "continue": plan.continue_tokens, "points_total": plan.total(model)}


def intervene_command(args: argparse.Namespace) -> int:
    """Run ``intervene``; return the exit code (0, 2 with one line on stderr, 130 on Ctrl-C).

    ``args`` carries the attributes of ``engine.cli.parser.add_intervene_parser``'s parser.
    ``--memory-budget`` holds for this run only (the engine's budget is process-wide).
    """
    budget = get_memory_budget()
    try:
        return _intervene(args)
    finally:
        set_memory_budget(budget)


def _intervene(args: argparse.Namespace) -> int:
    tty = hasattr(sys.stderr, "isatty") and sys.stderr.isatty()
    progress = Progress(sys.stderr, args.quiet or not tty)
    try:
        fmt = _check_out(args)
        if args.continue_tokens != 0 and fmt != "json":
            raise ValueError("--continue: the continuations are written to a JSON file; name "
                             "a .json --out")
        if args.memory_budget is not None:
            set_memory_budget(memory_size(args.memory_budget))
        text = args.text if args.text is not None else read_text_file(args.text_file)
        model = open_model(args.model)
        plan = plan_of(args, model)
    except KeyboardInterrupt:
        return interrupted()
    except ValueError as exc:  # ModelError, OutputIsInputError, a refused option
        return refused(str(exc))
    except UNFORESEEN_ERRORS as exc:
        return refused(str(unforeseen(args.model, exc)))
    sink: PointSink | None = None

    def write(out: TextIO) -> None:
        nonlocal sink
        sink = (JsonPoints if fmt == "json" else CsvPoints)(out, model.spec.layers,
                                                             _header(model, text, plan))
        _run(model, text, plan, sink, progress)

    def finish(complete: bool) -> None:
        if sink is not None:
            sink.finish(complete=complete)

    def described(exc: Exception) -> str:  # MemoryBudgetError and the engine's other refusals
        if isinstance(exc, MemoryBudgetError):
            return f"{exc} (--memory-budget SIZE)"
        return str(exc) if isinstance(exc, ValueError) else str(unforeseen(args.model, exc))

    where = "stdout" if args.out == "-" else args.out
    status = write_streamed(
        args.out, write, finish=finish, errors=(ValueError, *UNFORESEEN_ERRORS),
        describe=described, end=progress.end,
        stopped=lambda kept: f"interrupted: wrote {len(sink.points) if kept and sink else 0} "
        f"of {plan.total(model)} points to {where}")
    if status:
        return status
    assert sink is not None
    print(summary_line(sink.points, where), file=sys.stderr if args.out == "-" else sys.stdout)
    return 0
