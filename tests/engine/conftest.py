"""Fixtures shared by the engine's tests."""

from __future__ import annotations

import pytest

from engine.core import parallel
from engine.models import Model, open_model
from tests.engine.lm_models import tied_llama


@pytest.fixture
def threads():
    """``parallel.set_num_threads`` for one test; the old count comes back after it."""
    old = parallel.get_num_threads()
    yield parallel.set_num_threads
    parallel.set_num_threads(old)


@pytest.fixture(scope="module")
def llama(tmp_path_factory: pytest.TempPathFactory) -> Model:
    """The tied-embedding Llama 3 fixture, opened once per test module."""
    return open_model(tied_llama(tmp_path_factory.mktemp("lm")))
