"""``python main.py capture``: run a real model on a text and write its q and k (no Qt).

The model is a Hugging Face folder or a GGUF file (:func:`engine.models.open_model`); the
written file is the app's tensor format, which ``inspect`` and ``export --tensors`` read.
Every failure, a hostile file's included, ends in one line on stderr and exit status 2; the
output is written only when the capture is complete, and never over a file the model reads.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from engine.cli.output import interrupted, output_error, refused
from engine.cli.progress import Progress
from engine.core.memory import MemoryBudgetError, get_memory_budget
from engine.io.files import check_output_not_input, describe_os_error, read_text_limited
from engine.io.source import shown
from engine.models import ModelError, layers_text, open_model
from engine.models.capture import UNFORESEEN_ERRORS, unforeseen

__all__ = ["MAX_TEXT_BYTES", "capture_command", "memory_size", "read_text_file"]

#: Longest --text-file read (a text of more tokens than any model's positions is refused
#: anyway; this keeps a wrong file, a log or a binary, from being read whole).
MAX_TEXT_BYTES = 4 << 20
_SIZE = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:i?B)?", re.ASCII | re.IGNORECASE)


def read_text_file(path: str) -> str:
    """The UTF-8 text of the regular file ``path`` (at most :data:`MAX_TEXT_BYTES`): a FIFO
    or device is refused before it is opened, so nothing blocks."""
    try:
        text = read_text_limited(path, MAX_TEXT_BYTES, "text file")
    except UnicodeDecodeError as exc:
        raise ModelError(f"{shown(Path(path).name)}: not UTF-8 text (byte {exc.start})"
                         ) from None
    except OSError as exc:
        raise ModelError(f"{shown(path)}: cannot read it: {describe_os_error(exc)}") from None
    return text.removeprefix("\ufeff")


def memory_size(text: str) -> int:
    """Bytes of a size such as ``4G``, ``512MiB``, ``1.5GB`` or ``1000000`` (binary units)."""
    match = _SIZE.fullmatch(text.strip())
    if match is None or float(match[1]) <= 0:
        raise ValueError(f"--memory-budget {text!r}: give a size such as 2G, 512M or 4GiB")
    scale = 1 << (10 * " KMGT".index((match[2] or " ").upper()))
    return max(1, int(float(match[1]) * scale))


def _check_out(out: Path, args: argparse.Namespace) -> None:
    if out.suffix not in (".npz", ".safetensors"):
        raise ValueError(f"--out {str(out)!r}: name a .npz or .safetensors file")
    # Inside the model folder even a new file is refused: a model.safetensors written beside
    # the shards of an index would be read instead of them from then on.
    check_output_not_input(out, [args.model, args.text_file])


def capture_command(args: argparse.Namespace) -> int:
    """Run ``capture``; return the exit code (0, or 2 with one line on stderr)."""
    out = Path(args.out)
    progress = Progress(sys.stderr, args.quiet)
    try:
        try:
            budget = (get_memory_budget() if args.memory_budget is None
                      else memory_size(args.memory_budget))
            _check_out(out, args)
            text = args.text if args.text is not None else read_text_file(args.text_file)
            model = open_model(args.model)
            layers = None if args.layers is None else layers_text(args.layers, model.spec.layers)

            def report(done: int, total: int) -> None:
                progress.update(done / total, f"layer {done}/{total} of {model.name}",
                                done=done == total)

            capture = model.capture(text, max_tokens=args.max_tokens, layers=layers,
                                    keep_v=args.with_v, progress=report, memory_budget=budget)
        finally:  # the progress line ends before any message
            progress.end()
        capture.save(out)
    except KeyboardInterrupt:  # nothing is written: the file is saved only when complete
        return interrupted()
    except ValueError as exc:  # ModelError, MemoryBudgetError, OutputIsInputError, sizes
        hint = " (--memory-budget SIZE)" if isinstance(exc, MemoryBudgetError) else ""
        return refused(f"{exc}{hint}")
    except OSError as exc:
        return refused(output_error(args.out, exc))
    except UNFORESEEN_ERRORS as exc:  # still one line, naming the model
        return refused(str(unforeseen(args.model, exc)))
    spec = model.spec
    more = "" if capture.text_tokens_exact else "more than "
    cut = (f" of {more}{capture.text_tokens:,} tokens (text cut to --max-tokens)"
           if capture.meta["truncated"] else "")
    print(f"{out}: {len(capture.layers)} layers × {spec.heads} heads of {model.name} "
          f"({spec.architecture}, key heads {spec.kv_heads}), n = {len(capture.tokens)}"
          f"{cut}, "
          f"d_k = {spec.head_dim}, scale {spec.scales[0]:.6g} ({spec.scale_note})"
          f"{f', soft-cap {spec.cap:g}' if spec.cap is not None else ''}",
          file=sys.stderr if args.quiet else sys.stdout)
    return 0
