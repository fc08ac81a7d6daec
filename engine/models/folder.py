"""The files of a model on disk, read without blocking or trusting them: what a path is,
a Hugging Face folder's config.json and its safetensors files (one, or the shards of its
index, kept inside the folder), and the poll that lets a long open be cancelled."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

from engine.io.files import describe_os_error
from engine.io.source import shown
from engine.models.forward import CaptureCancelled
from engine.models.weights import ModelError, Poll, no_poll, read_json

__all__ = ["path_kind", "poller", "read_config", "safetensors_files"]


def read_config(folder: Path) -> dict[str, Any]:
    """The folder's ``config.json`` as a dict (a regular file of JSON text, bounded in size
    and nesting; else :class:`ModelError`)."""
    path = folder / "config.json"
    if not os.path.lexists(path):  # a FIFO or a dangling link is reported by read_json
        raise ModelError(f"{shown(folder.name)}: no config.json in the folder; a Hugging Face "
                         "model folder holds config.json, model.safetensors and tokenizer.json")
    config = read_json(path, shown(folder.name))
    if not isinstance(config, dict):
        raise ModelError(f"{shown(folder.name)}: config.json is not a JSON object")
    return config


def _shard_roots(folder: Path) -> list[str]:
    """Where a folder's shards may lie once links are followed: the folder, and for a
    snapshot of the Hugging Face cache (``…/snapshots/REV``, its files links to
    ``…/blobs``) that cache's blobs."""
    roots = [os.path.realpath(folder)]
    if os.path.basename(os.path.dirname(roots[0])) == "snapshots":
        roots.append(os.path.join(os.path.dirname(os.path.dirname(roots[0])), "blobs"))
    return roots


def _shard(folder: Path, name: str, roots: list[str]) -> Path:
    """The shard ``name`` of the index, if it is a file name inside the model folder."""
    label = f"{shown(folder.name)}: model.safetensors.index.json lists the shard " \
            f"{shown(repr(name), 80)}"
    if (not name or "\x00" in name or "\\" in name or PurePosixPath(name).is_absolute()
            or PureWindowsPath(name).drive or ".." in PurePosixPath(name).parts):
        raise ModelError(f"{label}; a shard must be named by a path inside the model folder "
                         "(no '..', not absolute)")
    path = folder / name
    real = os.path.realpath(path)
    if not any(os.path.commonpath([real, root]) == root for root in roots):
        raise ModelError(f"{label}, which leads outside the model folder (to "
                         f"{shown(real, 80)})")
    return path


def safetensors_files(folder: Path, poll: Poll = no_poll) -> list[Path]:
    """The folder's ``model.safetensors``, or the shards its index lists (each a path inside
    the folder, links included; else :class:`ModelError`)."""
    single = folder / "model.safetensors"
    index = folder / "model.safetensors.index.json"
    label = shown(folder.name)
    # lexists, not is_file: a FIFO or a dangling link is then refused by name when opened.
    if os.path.lexists(single):
        return [single]
    if os.path.lexists(index):
        listing = read_json(index, label)
        weight_map = listing.get("weight_map") if isinstance(listing, dict) else None
        if not isinstance(weight_map, dict):
            found = "nothing" if weight_map is None else f"a {type(weight_map).__name__}"
        else:
            found = next((shown(repr(v), 60) for v in weight_map.values()
                          if not isinstance(v, str)), "")
        if found:
            raise ModelError(f"{label}: model.safetensors.index.json: 'weight_map' must map "
                             f"each tensor name to a shard's file name; found {found}")
        shards = sorted(set(weight_map.values()))
        roots = _shard_roots(folder)
        paths = []
        for count, name in enumerate(shards):
            if not count % 64:
                poll()
            paths.append(_shard(folder, name, roots))
        missing = [s for s, p in zip(shards, paths, strict=True) if not os.path.lexists(p)]
        if missing:
            raise ModelError(f"{label}: {len(missing)} of {len(shards)} shards "
                             f"are missing, e.g. {shown(missing[0], 80)}")
        return paths
    if any(folder.glob("*.bin")) or any(folder.glob("*.pt")):
        raise ModelError(f"{label}: the weights are PyTorch pickles (.bin); the "
                         "app reads model.safetensors (convert with transformers' "
                         "save_pretrained(safe_serialization=True))")
    raise ModelError(f"{label}: no model.safetensors or "
                     "model.safetensors.index.json in the folder")


def path_kind(path: Path) -> str:
    """``"folder"`` or ``"file"``; a path that cannot name either is one line, not an OSError
    (a name too long) or a ValueError (a NUL character)."""
    try:
        info = os.stat(path)
    except (OSError, ValueError) as exc:
        missing = isinstance(exc, ValueError) or exc.errno in (errno.ENOENT, errno.ENOTDIR)
        reason = "no such file or folder" if missing else describe_os_error(exc)
        raise ModelError(f"{shown(path)}: {reason}") from None
    return "folder" if stat.S_ISDIR(info.st_mode) else "file"


def poller(cancelled: Callable[[], bool] | None) -> Poll:
    """The :data:`~engine.models.weights.Poll` of ``cancelled``: raises
    :class:`~engine.models.forward.CaptureCancelled` once it returns True."""
    if cancelled is None:
        return no_poll

    def poll() -> None:
        if cancelled():
            raise CaptureCancelled()

    return poll
