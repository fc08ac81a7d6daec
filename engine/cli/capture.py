"""``python main.py capture``: run a real model on a text and write its q and k (no Qt).

The model is a Hugging Face folder or a GGUF file (:func:`engine.models.open_model`); the
written file is the app's tensor format, which ``inspect`` and ``export --tensors`` read.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from engine.cli.progress import Progress
from engine.core.memory import MemoryBudgetError
from engine.io.files import describe_os_error
from engine.io.source import shown
from engine.models import ModelError, layers_text, open_model

__all__ = ["MAX_TEXT_BYTES", "capture_command"]

#: Longest --text-file read (a text of more tokens than any model's positions is refused
#: anyway; this keeps a wrong file, a log or a binary, from being read whole).
MAX_TEXT_BYTES = 4 << 20


def read_text_file(path: str) -> str:
    """The UTF-8 text of ``path`` (at most :data:`MAX_TEXT_BYTES`)."""
    file = Path(path)
    try:
        with file.open("rb") as fh:
            raw = fh.read(MAX_TEXT_BYTES + 1)
    except OSError as exc:
        raise ModelError(f"{shown(path)}: cannot read it: {describe_os_error(exc)}") from None
    if len(raw) > MAX_TEXT_BYTES:
        raise ModelError(f"{shown(file.name)}: more than {MAX_TEXT_BYTES >> 20} MiB; a text "
                         "for a model is far shorter")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ModelError(f"{shown(file.name)}: not UTF-8 text (byte {exc.start})") from None


def capture_command(args: argparse.Namespace) -> int:
    """Run ``capture``; return the exit code (0, or 2 with one line on stderr)."""
    out = Path(args.out)
    if out.suffix not in (".npz", ".safetensors"):
        print(f"error: --out {args.out!r}: name a .npz or .safetensors file", file=sys.stderr)
        return 2
    progress = Progress(sys.stderr, args.quiet)
    try:
        text = args.text if args.text is not None else read_text_file(args.text_file)
        model = open_model(args.model)
        layers = None if args.layers is None else layers_text(args.layers)

        def report(done: int, total: int) -> None:
            progress.update(done / total, f"layer {done}/{total} of {model.name}",
                            done=done == total)

        capture = model.capture(text, max_tokens=args.max_tokens, layers=layers,
                                keep_v=args.with_v, progress=report)
        progress.end()
        capture.save(out)
    except (ModelError, MemoryBudgetError) as exc:
        progress.end()
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        progress.end()
        print(f"error: cannot write --out {args.out!r}: {describe_os_error(exc)}",
              file=sys.stderr)
        return 2
    spec = model.spec
    print(f"{out}: {len(capture.layers)} layers × {spec.heads} heads of {model.name} "
          f"({spec.architecture}, key heads {spec.kv_heads}), n = {len(capture.tokens)}"
          f"{' (text cut to --max-tokens)' if capture.meta['truncated'] else ''}, "
          f"d_k = {spec.head_dim}, scale {spec.scales[0]:.6g} ({spec.scale_note})"
          f"{f', soft-cap {spec.cap:g}' if spec.cap is not None else ''}",
          file=sys.stderr if args.quiet else sys.stdout)
    return 0
