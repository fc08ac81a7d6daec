"""engine/__init__.py's public API: every exported name resolves, lazily, from its real home."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest

import engine

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", engine.__all__)
def test_every_exported_name_resolves_from_its_defining_module(name: str) -> None:
    value = getattr(engine, name)
    if name == "theory":
        assert isinstance(value, types.ModuleType) and value.__name__ == "engine.core.theory"
        return
    if isinstance(value, type | types.FunctionType):
        home = sys.modules[value.__module__]  # where it is defined, loaded by the lookup
        assert home.__name__.startswith("engine.") and getattr(home, name) is value, name
    else:  # a constant: the same object as in the engine module that holds it
        assert any(getattr(module, name, None) is value for module_name, module in
                   list(sys.modules.items()) if module_name.startswith("engine.")), name


def test_unknown_names_raise_attribute_error_and_dir_lists_the_api() -> None:
    with pytest.raises(AttributeError, match="no attribute 'not_a_name'"):
        engine.not_a_name  # noqa: B018
    assert dir(engine) == engine.__all__ == sorted(set(engine.__all__))


def test_import_engine_loads_no_engine_submodule() -> None:
    code = (
        "import sys, engine; "
        "loaded = sorted(m for m in sys.modules if m.startswith('engine.')); "
        "print(loaded); "
        "engine.scaled_dot_product_attention; engine.softmax; engine.run_sweep; engine.theory; "
        "print(all(m in sys.modules for m in ('engine.core.attention', 'engine.core.softmax', "
        "'engine.analysis.sweep', 'engine.core.theory')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0] == "[]"
    assert out[1] == "True"
