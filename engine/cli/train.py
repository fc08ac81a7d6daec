"""Headless ``train`` and ``lr-sweep`` commands (engine only: never imports Qt).

``python main.py train --task retrieval --rules none,sqrt,linear --d-k 64 --steps 500 --json``
trains the rules side by side and prints a summary; ``python main.py lr-sweep --lrs ... --seeds
3 --out FILE.csv`` writes the learning-rate sweep CSV and prints the largest stable learning
rate per rule. Progress goes to stderr (unless ``--quiet``). Invalid input prints
``error: ...`` on stderr and returns exit code 2; Ctrl-C writes nothing and returns 130.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from enum import StrEnum
from pathlib import Path

from engine.cli.options import build_config, field_values, option_fields
from engine.cli.output import interrupted, output_error, readable_number, refused
from engine.cli.progress import Progress
from engine.config.train import TrainConfig
from engine.io.files import probe_output
from engine.io.meta import json_number

__all__ = ["lr_sweep_command", "train_command", "train_command_line"]

EXIT_OK = 0


def _split(text: str, what: str) -> list[str]:
    items = [part.strip() for part in str(text).split(",")]
    if not items or any(not part for part in items):
        raise ValueError(f"{what} must be a comma-separated list without empty items, "
                         f"got {text!r}")
    return items


def _parse_lrs(text: str) -> list[float]:
    out = []
    for part in _split(text, "--lrs"):
        try:
            out.append(float(part))
        except ValueError:
            raise ValueError(f"--lrs must hold numbers, got {part!r}") from None
    return out


def _config_from_args(args: argparse.Namespace) -> TrainConfig:
    # Scalar options map onto fields one to one (lr and seed only in ``train``: lr-sweep
    # sweeps them); the rule list is parsed here.
    values = field_values(args, TrainConfig)
    values["rules"] = tuple(_split(args.rules, "--rules"))
    return build_config(TrainConfig, values)


def _option_text(value: object) -> str:
    if isinstance(value, StrEnum):
        return value.value
    if isinstance(value, tuple):
        return ",".join(_option_text(v) for v in value)
    return repr(value) if isinstance(value, float) else str(value)


_ALWAYS_LISTED = ("task", "rules", "d_k", "lr", "seed")


def train_command_line(config: TrainConfig) -> str | None:
    """The ``python main.py train`` command that trains ``config``, or None if none can.

    Lists every option whose value differs from its default, and always ``--task``,
    ``--rules``, ``--d-k``, ``--lr`` and ``--seed``. None when a field without an option
    (temperature, gain, cap, dtype, snapshot_every, divergence_factor) differs from its
    default.
    """
    default = TrainConfig()
    fields = [*option_fields(TrainConfig), *option_fields(TrainConfig, "train")]
    names = {field.name for field in fields}
    if any(getattr(config, name) != getattr(default, name)
           for name in TrainConfig.bound() if name not in names):
        return None
    words = ["python", "main.py", "train"]
    for field in fields:
        value = getattr(config, field.name)
        if value is None:
            continue
        if value != getattr(default, field.name) or field.name in _ALWAYS_LISTED:
            assert field.spec.cli is not None
            words += [field.spec.cli.flags[0], _option_text(value)]
    return shlex.join(words)


def _check_tensors_out(path: str) -> str:
    """"" if ``path`` can take the tensor file, else the reason."""
    target = Path(path)
    if target.suffix not in (".npz", ".safetensors"):
        return f"--tensors-out {path!r}: the file name must end in .npz or .safetensors"
    try:
        probe_output(target)
    except OSError as exc:
        return output_error(path, exc, "--tensors-out")
    return ""


def _write_tensors(session: object, config: TrainConfig, path: str, quiet: bool) -> str:
    """Write the trained q and k; "" or the reason it failed."""
    from engine.training.export_qk import write_trained_tensors

    command = train_command_line(config) or "python main.py train"
    command += " " + shlex.join(["--tensors-out", path])
    try:
        written = write_trained_tensors(path, session, command=command)  # type: ignore[arg-type]
    except OSError as exc:  # an existing file is left as it was (engine.io.files)
        return output_error(path, exc, "--tensors-out")
    except ValueError as exc:
        return f"--tensors-out: {exc}"
    if not quiet:
        print(f"wrote {written} (layer i = rule i of --rules)", file=sys.stderr)
    return ""


def _loss_text(loss: float, diverged: bool) -> str:
    """A rule's training loss in the progress line: "–" before its first evaluation (NaN then
    means "not measured yet", not divergence)."""
    if diverged:
        return f"{loss:.3f} (diverged)"
    return f"{loss:.3f}" if math.isfinite(loss) else "–"


def train_command(args: argparse.Namespace) -> int:
    """Run ``main.py train``; return the exit code."""
    from engine.training.session import TrainingSession
    from engine.training.trainer import blas_threads, iter_training

    tensors_out = getattr(args, "tensors_out", None)
    try:
        config = _config_from_args(args)
        with blas_threads(config):
            session = TrainingSession(config)  # refuses a model over the memory budget
    except ValueError as exc:
        return refused(str(exc))
    if tensors_out is not None:
        problem = _check_tensors_out(tensors_out)
        if problem:
            return refused(problem)
    progress = Progress(sys.stderr, args.quiet)
    last = None
    try:
        for snap in iter_training(config, session=session):
            last = snap
            losses = "  ".join(f"{rule.value} {_loss_text(st.train_loss, st.diverged)}"
                               for rule, st in snap.rules.items())
            progress.update(snap.step / snap.total_steps,
                            f"step {snap.step}/{snap.total_steps}  {losses}", done=snap.done)
    except KeyboardInterrupt:  # the results are written only when complete
        progress.end()
        return interrupted()
    progress.end()
    assert last is not None and last.done
    if tensors_out is not None:
        problem = _write_tensors(session, config, tensors_out, args.quiet)
        if problem:
            return refused(problem)
    summary = {
        "config": config.to_dict(),
        "steps": last.step,
        "steps_per_s": last.steps_per_s,
        "elapsed_s": last.elapsed_s,
        "chance_loss": last.chance_loss,
        "rules": {
            rule.value: {
                "label": rule.label,
                "final_train_loss": json_number(st.train_loss),
                "final_eval_loss": json_number(st.eval_loss),
                "initial_eval_loss": json_number(st.initial_eval_loss),
                "eval_accuracy": json_number(st.eval_accuracy),
                "diverged_at": st.diverged_at,
                "diverge_reason": st.diverge_reason or None,
                "attention_entropy": [json_number(e) for e in st.entropy],
                "max_abs_logit": json_number(st.max_abs_logit),
                "steps_per_s": last.steps_per_s,
            }
            for rule, st in last.rules.items()
        },
    }
    if tensors_out is not None:
        summary["tensors_out"] = tensors_out
    if args.json:
        print(json.dumps(summary, ensure_ascii=False))
        return EXIT_OK
    print(
        f"task {config.task.value}, d_k {config.d_k}, d_model {config.model_width}, heads "
        f"{config.heads}, n {config.n}, batch {config.batch}, {config.optimizer.value} lr "
        f"{config.lr:g}, seed {config.seed}: {last.step} steps, {last.steps_per_s:.0f} steps/s "
        f"(all rules), chance loss {last.chance_loss:.3f}"
    )
    print(f"{'rule':10s} {'train loss':>10s} {'held-out':>10s} {'accuracy':>9s} "
          f"{'entropy':>8s} {'max|logit|':>10s}  diverged")
    for rule, st in last.rules.items():
        div = "-" if st.diverged_at is None else f"step {st.diverged_at} ({st.diverge_reason})"
        ent = sum(st.entropy) / len(st.entropy)
        print(f"{rule.value:10s} {st.train_loss:10.4f} {st.eval_loss:10.4f} "
              f"{st.eval_accuracy:9.3f} {ent:8.3f} {readable_number(st.max_abs_logit):>10s}  {div}")
    return EXIT_OK


def lr_sweep_command(args: argparse.Namespace) -> int:
    """Run ``main.py lr-sweep``; return the exit code."""
    from engine.training.lr_results import write_lr_sweep_csv
    from engine.training.lr_sweep import iter_lr_sweep

    try:
        config = _config_from_args(args)
        lrs = _parse_lrs(args.lrs)
        if isinstance(args.seeds, bool) or not isinstance(args.seeds, int) or args.seeds < 1:
            raise ValueError(f"--seeds must be a positive integer, got {args.seeds!r}")
        sweep = iter_lr_sweep(config, lrs, args.seeds)
        first = next(sweep)  # validates lrs and seeds before anything is written
    except ValueError as exc:
        return refused(str(exc))
    out_path = args.out
    if out_path != "-":
        try:
            probe_output(out_path)
        except OSError as exc:
            return refused(output_error(out_path, exc))
    progress = Progress(sys.stderr, args.quiet)
    result = first.result
    item = first
    try:
        while result is None:
            progress.update(
                item.fraction,
                f"{item.done_runs}/{item.total_runs} runs done; lr {item.lr:g}, seed "
                f"{item.seed}: step {item.step}/{item.steps}")
            item = next(sweep)
            result = item.result
    except KeyboardInterrupt:  # the results are written only when complete
        progress.end()
        return interrupted()
    progress.update(1.0, f"{item.total_runs}/{item.total_runs} runs done", done=True)
    progress.end()
    if out_path == "-":
        write_lr_sweep_csv(result, sys.stdout)
        report = sys.stderr
    else:
        try:
            write_lr_sweep_csv(result, out_path)
        except OSError as exc:  # an existing file is left as it was (engine.io.files)
            return refused(output_error(out_path, exc))
        report = sys.stdout
    print(f"largest stable learning rate per rule (no seed diverged and mean final held-out "
          f"loss < {result.stable_ratio:g} × initial loss), d_k {config.d_k}:", file=report)
    for rule, lr in result.largest_stable_lr.items():
        text = "none of the swept learning rates" if lr is None else f"{lr:g}"
        print(f"  {rule.value:10s} {text}", file=report)
    return EXIT_OK
