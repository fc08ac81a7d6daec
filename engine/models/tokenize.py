"""The model's own tokenizer: ``tokenizer.json`` of a Hugging Face folder, or the vocabulary
in a GGUF file's metadata, both run by the ``tokenizers`` library.

Building one takes 0.1 s inside ``tokenizers`` with Python's interpreter lock held (its
constructors never release it), which would freeze every other Python thread of a window for
as long. A :class:`TokenizerSource` is therefore small and picklable, and
:class:`TokenizerProcess` builds and runs tokenizers in a helper process.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import multiprocessing
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.io.files import check_regular_file, describe_os_error, read_text_limited
from engine.io.source import shown
from engine.models.gguf_vocab import gguf_backend
from engine.models.token_text import piece_bytes, readable_bytes
from engine.models.weights import MAX_JSON_BYTES, ModelError

__all__ = ["Encoded", "Tokenizer", "TokenizerProcess", "TokenizerSource", "check_hf_tokenizer",
           "gguf_tokenizer", "hf_tokenizer"]


class Tokenizer:
    """Text → token ids and the token strings shown on the axes."""

    def __init__(self, backend: Any, source: str) -> None:
        self._backend = backend
        #: Where the tokenizer came from: "tokenizer.json" or "GGUF vocabulary".
        self.source = source

    def encode(self, text: str) -> list[int]:
        """The ids of ``text`` with the special tokens the model adds by default."""
        return list(self._backend.encode(text, add_special_tokens=True).ids)

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        """Each id decoded on its own, special tokens kept (``[CLS]``, ``<|im_start|>``); a
        token holding part of a character shows those bytes (``⟨e6 b3⟩``, see
        :mod:`engine.models.token_text`) instead of "�"."""
        texts = []
        for i in ids:
            text = self._backend.decode([int(i)], skip_special_tokens=False)
            if "\ufffd" in text:
                raw = piece_bytes(self._backend.id_to_token(int(i)))
                text = text if raw is None else readable_bytes(raw)
            texts.append(text)
        return texts

    def decode(self, ids: Sequence[int]) -> str:
        """The text of ``ids`` together, special tokens left out."""
        return str(self._backend.decode([int(i) for i in ids], skip_special_tokens=True))

    def token_id(self, token: str) -> int | None:
        """The id of the vocabulary entry ``token`` (``"[MASK]"``), None if there is none."""
        found = self._backend.token_to_id(token)
        return None if found is None else int(found)

    def encode_text(self, text: str, limit: int | None = None) -> Encoded:
        """The ids of ``text`` (the first ``limit`` of them) with their token strings."""
        ids = self.encode(text)
        kept = ids if limit is None else ids[: max(limit, 0)]
        return Encoded(tuple(kept), tuple(self.token_texts(kept)), len(ids))


@dataclasses.dataclass(frozen=True)
class Encoded:
    """A text's tokens: the first ids (all, or as many as were asked for), each decoded on
    its own, and how many tokens the whole text has (``whole`` False: the text was tokenized
    by a prefix and ``total`` is a lower bound)."""

    ids: tuple[int, ...]
    tokens: tuple[str, ...]
    total: int
    whole: bool = True


@dataclasses.dataclass(frozen=True)
class TokenizerSource:
    """Where a model's tokenizer comes from, as plain data (it crosses process boundaries).

    Attributes
    ----------
    kind
        ``"tokenizer.json"`` (a Hugging Face folder's file) or ``"GGUF vocabulary"``.
    path
        That file.
    stamp
        Its size and modification time: a changed file is built anew.
    """

    kind: str
    path: str
    stamp: tuple[int, int]

    @classmethod
    def of(cls, kind: str, path: Path) -> TokenizerSource:
        """The source ``kind`` read from ``path`` as it is now."""
        try:
            info = os.stat(path)
            stamp = (info.st_size, info.st_mtime_ns)
        except OSError:
            stamp = (-1, -1)
        return cls(kind, str(path), stamp)

    def build(self) -> Tokenizer:
        """Read the file and build the tokenizer (raises :class:`ModelError`)."""
        path = Path(self.path)
        if self.kind == "tokenizer.json":
            return hf_tokenizer(path.parent)
        from engine.models.gguf_file import GgufFile

        return gguf_tokenizer(GgufFile(path, tensors=False).metadata, shown(path.name))


@functools.lru_cache(maxsize=4)
def _cached(source: TokenizerSource) -> Tokenizer:
    return source.build()


def _serve(connection: Any) -> None:
    """The helper process: answer ``(request, source, text, limit)`` until the pipe closes."""
    while True:
        try:
            request, source, text, limit = connection.recv()
        except (EOFError, OSError):
            return
        try:
            answer: tuple[str, Any] = ("ok", _cached(source).encode_text(text, limit))
        except ModelError as exc:
            answer = ("error", str(exc))
        except Exception as exc:  # reported to the caller, which shows it
            answer = ("error", f"the tokenizer failed: {type(exc).__name__}: {exc}")
        try:
            connection.send((request, answer))
        except OSError:  # the app closed its end meanwhile (a window closed mid-text)
            return


class _HelperDied(Exception):
    pass


class TokenizerProcess:
    """Tokenize in a helper process that keeps the tokenizers it built.

    Start-up costs a fresh interpreter importing ``tokenizers``, once; after that, a text of
    a model already seen takes a pipe round trip. The process is a daemon,
    so it ends with the program even when :meth:`close` was not called.
    """

    def __init__(self) -> None:
        self._process: Any = None
        self._connection: Any = None
        self._requests = itertools.count()

    def encode(self, source: TokenizerSource, text: str, limit: int | None = None,
               cancelled: Callable[[], bool] | None = None) -> Encoded | None:
        """The tokens of ``text``; ``None`` once ``cancelled()`` returned True (checked every
        50 ms while waiting).

        Raises
        ------
        ModelError
            The tokenizer cannot be built or run, or the helper process ended.
        """
        for attempt in (1, 2):
            try:
                return self._ask(source, text, limit, cancelled)
            except _HelperDied as died:
                self.close()
                # Once more in a fresh process (the helper may have been killed between two
                # texts); a helper that dies on this text twice is reported.
                if attempt == 2:
                    raise ModelError(f"the tokenizer's helper process ended ({died})") from None
        raise AssertionError("unreachable")

    def _ask(self, source: TokenizerSource, text: str, limit: int | None,
             cancelled: Callable[[], bool] | None) -> Encoded | None:
        connection = self._start()
        request = next(self._requests)
        try:
            connection.send((request, source, text, limit))
        except OSError as exc:
            raise _HelperDied(str(exc)) from exc
        while True:
            if cancelled is not None and cancelled():
                return None  # its answer, when it comes, is skipped by the next request
            if connection.poll(0.05):
                try:
                    answered, (status, payload) = connection.recv()
                except (EOFError, OSError) as exc:
                    raise _HelperDied(str(exc) or type(exc).__name__) from exc
                if answered != request:
                    continue
                if status == "error":
                    raise ModelError(payload)
                return payload
            if not self._process.is_alive():
                raise _HelperDied(f"exit code {self._process.exitcode}")

    @property
    def pid(self) -> int | None:
        """The helper process's id while it runs."""
        return self._process.pid if self._process is not None else None

    def close(self) -> None:
        """End the helper process (a later :meth:`encode` starts a new one)."""
        process, connection = self._process, self._connection
        self._process = self._connection = None
        if connection is not None:
            connection.close()
        if process is not None:
            process.join(0.5)
            if process.is_alive():
                process.terminate()
                process.join(1.0)

    def _start(self) -> Any:
        if self._process is not None and self._process.is_alive():
            return self._connection
        self.close()
        # "spawn": forking a process that runs Qt and BLAS threads is unsafe.
        context = multiprocessing.get_context("spawn")
        ours, theirs = context.Pipe()
        process = context.Process(target=_serve, args=(theirs,), daemon=True,
                                  name="tokenizer")
        process.start()
        theirs.close()
        self._process, self._connection = process, ours
        return ours


def check_hf_tokenizer(folder: Path) -> Path:
    """The folder's ``tokenizer.json``, if there is one (else :class:`ModelError`)."""
    path = folder / "tokenizer.json"
    if not os.path.lexists(path):
        raise ModelError(f"{shown(folder.name)}: no tokenizer.json in the folder (the model's "
                         "fast tokenizer, which the app runs to turn a text into tokens)")
    try:
        check_regular_file(path)
    except OSError as exc:  # a FIFO, a device, a dangling link
        raise ModelError(f"{shown(folder.name)}: tokenizer.json cannot be read: "
                         f"{describe_os_error(exc)}") from exc
    return path


def hf_tokenizer(folder: Path) -> Tokenizer:
    """The ``tokenizer.json`` of a Hugging Face model folder."""
    from tokenizers import Tokenizer as Backend

    path = check_hf_tokenizer(folder)
    try:
        # Read here, not by path in ``tokenizers``: a FIFO swapped in since the check would
        # block it, and its size is bounded.
        text = read_text_limited(path, MAX_JSON_BYTES, "tokenizer.json")
    except (OSError, UnicodeDecodeError) as exc:
        reason = describe_os_error(exc) if isinstance(exc, OSError) else "not UTF-8"
        raise ModelError(f"{shown(folder.name)}: tokenizer.json cannot be read: {reason}"
                         ) from exc
    try:
        backend = Backend.from_str(text)
    except Exception as exc:  # tokenizers raises its own Exception subclass
        raise ModelError(f"{shown(folder.name)}: tokenizer.json cannot be read: "
                         f"{str(exc)[:200]}") from exc
    # Saved with padding to a fixed length, or truncation (sentence-transformers' MiniLM
    # pads to 128): the capture wants the text's own tokens; max tokens cuts it.
    backend.no_padding()
    backend.no_truncation()
    return Tokenizer(backend, "tokenizer.json")


def gguf_tokenizer(metadata: Mapping[str, Any], label: str) -> Tokenizer:
    """Rebuild a GGUF file's vocabulary: byte-level BPE (``tokenizer.ggml.model`` ``gpt2``) or
    SentencePiece (``llama``), see :mod:`engine.models.gguf_vocab`."""
    return Tokenizer(gguf_backend(metadata, label), "GGUF vocabulary")
