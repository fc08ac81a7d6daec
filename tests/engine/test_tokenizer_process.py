"""The tokenizer's helper process: the model's own tokens, its problems reported, its death
survived, and a quiet end when the app hangs up."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from engine.models import CaptureCancelled, ModelError, open_model
from engine.models.tokenize import TokenizerProcess

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "models"


@pytest.fixture(scope="module")
def tokenizer_process():
    process = TokenizerProcess()
    yield process
    process.close()


@pytest.mark.parametrize("name", ["tiny-llama", "tiny-llama.gguf", "tiny-bert"])
def test_the_tokenizer_process_gives_the_model_s_own_tokens(tokenizer_process,
                                                            name: str) -> None:
    model = open_model(FIXTURES / name)
    text = "The lazy dog sleeps. " * 3
    here = model.tokenizer.encode_text(text, 5)
    there = tokenizer_process.encode(model.tokenizer_source, text, 5)
    assert there == here and len(there.ids) == 5 and there.total > 5
    captured = model.capture(text, max_tokens=7, layers=[0],
                             tokenize=lambda t, limit: tokenizer_process.encode(
                                 model.tokenizer_source, t, limit))
    assert captured.token_ids == model.capture(text, max_tokens=7, layers=[0]).token_ids
    assert captured.tokens == tuple(model.tokenizer.token_texts(captured.token_ids))


def test_the_tokenizer_process_reports_problems_and_skips_cancelled_answers(
        tokenizer_process, tmp_path: Path) -> None:
    folder = tmp_path / "llama"
    shutil.copytree(FIXTURES / "tiny-llama", folder)
    (folder / "tokenizer.json").write_text("{not json", encoding="utf-8")
    model = open_model(folder)  # read when first used
    with pytest.raises(ModelError, match=r"tokenizer\.json cannot be read"):
        tokenizer_process.encode(model.tokenizer_source, "a text")
    with pytest.raises(ModelError, match=r"tokenizer\.json cannot be read"):
        model.capture("a text")
    good = open_model(FIXTURES / "tiny-llama").tokenizer_source
    assert tokenizer_process.encode(good, "one two", cancelled=lambda: True) is None
    # The cancelled request's answer arrives later and must not answer this one.
    answer = tokenizer_process.encode(good, "three four five six")
    assert answer == open_model(FIXTURES / "tiny-llama").tokenizer.encode_text(
        "three four five six")
    with pytest.raises(CaptureCancelled):
        open_model(FIXTURES / "tiny-llama").capture("x", tokenize=lambda t, limit: None)


def test_the_tokenizer_helper_ends_quietly_when_the_app_hangs_up_mid_text() -> None:
    """Closing the window while a text is tokenized closes the pipe before the answer is sent:
    the helper must end, not print a BrokenPipeError traceback into the user's terminal."""
    code = textwrap.dedent(f"""
        from engine.models import open_model
        from engine.models.tokenize import TokenizerProcess
        process = TokenizerProcess()
        source = open_model({str(FIXTURES / "tiny-llama")!r}).tokenizer_source
        assert process.encode(source, "the helper is up").ids
        process.encode(source, "a text nobody waits for " * 2_000, cancelled=lambda: True)
        process.close()  # hangs up before the answer comes
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr


def test_a_tokenizer_process_that_died_is_started_again() -> None:
    import signal

    process = TokenizerProcess()
    source = open_model(FIXTURES / "tiny-llama").tokenizer_source
    try:
        assert process.encode(source, "before").ids
        first = process.pid
        os.kill(first, signal.SIGKILL)  # what a crash of the helper looks like
        assert process.encode(source, "after").ids
        assert process.pid not in (None, first)
    finally:
        process.close()
    assert process.pid is None
