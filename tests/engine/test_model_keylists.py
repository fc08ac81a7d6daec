"""Right or refused: every config field transformers writes for a family the app opens, and
every GGUF key gguf-py knows for a GGUF architecture it opens, is listed as modelled, known not
to matter or refused; each refused setting makes the open fail in one line naming the key and
its value, and its harmless value opens as before. (The lists: engine/models/families.py and
engine/models/gguf_keys.py; transformers' fields: tests/fixtures/dump_config_fields.py.)"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import gguf
import pytest

from engine.models import ModelError, open_model
from engine.models.blocks import BLOCKS
from engine.models.families import (
    COMMON_IGNORED,
    COMMON_REFUSED,
    IGNORED_KEYS,
    MODELLED_KEYS,
    REFUSED_KEYS,
)
from engine.models.gguf_file import GgufFile
from engine.models.gguf_keys import GGUF_IGNORED, GGUF_MODELLED, GGUF_REFUSED
from engine.models.spec import (
    ARCHITECTURES,
    GGUF_ARCHITECTURES,
    GGUF_FAMILIES,
    spec_from_gguf,
)
from tests.fixtures.gguf_convert import folder_to_gguf

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "models"
TRANSFORMERS = json.loads((FIXTURES / "config_fields.json").read_text())["fields"]
#: The tiny folder of each family (config.json as save_pretrained wrote it).
FOLDERS = {"bert": ["tiny-bert"], "gpt2": ["tiny-gpt2"], "llama": ["tiny-llama"],
           "mistral": ["tiny-mistral", "tiny-mistral-sw"],
           "qwen2": ["tiny-qwen2", "tiny-qwen2-sw"], "qwen3": ["tiny-qwen3"],
           "gemma2": ["tiny-gemma2", "tiny-gemma2-sw"], "olmo2": ["tiny-olmo2"],
           "granite": ["tiny-granite"], "gemma3_text": ["tiny-gemma3"], "phi3": ["tiny-phi3"]}
#: The GGUF architectures whose tiny folder (tiny-<arch>) is written as GGUF here.
GGUF_FOLDERS = ("qwen2", "qwen3", "gemma2", "phi3", "gemma3", "granite", "olmo2")


def _listed(family: str) -> set[str]:
    return (set(MODELLED_KEYS[family]) | set(IGNORED_KEYS[family]) | set(COMMON_IGNORED)
            | set(COMMON_REFUSED) | set(REFUSED_KEYS.get(family, {})))


def test_every_family_the_app_opens_has_its_lists() -> None:
    """A family added to the registry without its lists fails here (gemma3 opens as its
    text_config, gemma3_text)."""
    for arch in set(ARCHITECTURES) - {"gemma3"}:
        assert arch in MODELLED_KEYS and arch in IGNORED_KEYS, arch
    for arch in GGUF_ARCHITECTURES:
        assert arch in GGUF_MODELLED, arch


def test_every_architecture_runs_on_a_forward_block() -> None:
    """A row of the registry naming a forward pass that has no pieces in
    engine.models.blocks.BLOCKS fails here, not at a user's capture."""
    assert set(ARCHITECTURES.values()) | set(GGUF_FAMILIES.values()) == set(BLOCKS)


@pytest.mark.parametrize("family", sorted(FOLDERS))
def test_every_field_transformers_writes_is_listed(family: str) -> None:
    written = set(TRANSFORMERS[family])
    for folder in FOLDERS[family]:
        written |= set(json.loads((FIXTURES / folder / "config.json").read_text()))
    assert written - _listed(family) == set()
    assert not set(MODELLED_KEYS[family]) & set(IGNORED_KEYS[family])
    assert not set(REFUSED_KEYS.get(family, {})) & (set(MODELLED_KEYS[family])
                                                    | set(IGNORED_KEYS[family]))


def _refusals() -> list[tuple[str, str, object]]:
    """(folder, key, value): the generic tables' rows with a value they refuse, and the
    settings the family's own reading refuses."""
    cases = [(FOLDERS[family][0], key, True if (False,) == harmless else {"quant_method": "gptq"})
             for family in FOLDERS
             for key, (harmless, _) in {**COMMON_REFUSED, **REFUSED_KEYS.get(family, {})}.items()]
    return [*cases,
            ("tiny-bert", "is_decoder", True),
            ("tiny-bert", "position_embedding_type", "relative_key"),
            ("tiny-gpt2", "activation_function", "relu"),
            ("tiny-llama", "mlp_bias", True),
            ("tiny-llama", "rope_parameters.rope_type", "yarn"),
            ("tiny-mistral", "mlp_bias", True),
            ("tiny-mistral", "partial_rotary_factor", 0.5),
            ("tiny-qwen2", "rope_parameters.rope_type", "dynamic"),
            ("tiny-qwen3", "rope_parameters.partial_rotary_factor", 0.5),
            ("tiny-gemma2", "mlp_bias", True),
            ("tiny-gemma2", "rope_parameters.rope_type", "longrope")]


@pytest.mark.parametrize(("folder", "key", "value"), _refusals())
def test_a_refused_setting_fails_the_open_in_one_line_naming_key_and_value(
        tmp_path: Path, folder: str, key: str, value: object) -> None:
    copy = tmp_path / folder
    shutil.copytree(FIXTURES / folder, copy)
    config = json.loads((copy / "config.json").read_text())
    holder, _, name = key.rpartition(".")
    (config[holder] if holder else config)[name] = value
    (copy / "config.json").write_text(json.dumps(config))
    with pytest.raises(ModelError) as caught:
        open_model(copy)
    message = str(caught.value)
    assert "\n" not in message and f"'{key}'" in message and repr(value) in message, message


@pytest.mark.parametrize(("family", "key"), [(f, k) for f in FOLDERS
                                             for k in REFUSED_KEYS.get(f, {})])
def test_a_refused_key_at_its_harmless_value_gives_the_same_spec(
        tmp_path: Path, family: str, key: str) -> None:
    folder = FIXTURES / FOLDERS[family][0]
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    config[key] = REFUSED_KEYS[family][key][0][0]
    (copy / "config.json").write_text(json.dumps(config))
    assert open_model(copy).spec == open_model(folder).spec


# -- GGUF -------------------------------------------------------------------------------------

def _known_names(arch: str) -> set[str]:
    """The names gguf-py's Keys put under ``<arch>.`` ({dense}: EmbeddingGemma's dense_2/3)."""
    names = set()
    for group in vars(gguf.constants.Keys).values():
        for value in vars(group).values() if isinstance(group, type) else ():
            if isinstance(value, str) and value.startswith("{arch}."):
                for dense in ("dense_2", "dense_3"):
                    names.add(value.format(arch=arch, dense=dense)[len(arch) + 1:])
    return names


@pytest.mark.parametrize("arch", GGUF_ARCHITECTURES)
def test_every_gguf_key_gguf_py_knows_is_listed(arch: str) -> None:
    names = _known_names(arch)
    assert len(names) > 100  # the groups were found
    listed = set(GGUF_MODELLED[arch]) | set(GGUF_IGNORED) | set(GGUF_REFUSED)
    assert names - listed == set()
    assert not set(GGUF_IGNORED) & (set(GGUF_MODELLED[arch]) | set(GGUF_REFUSED))


@pytest.fixture(scope="module")
def metadata(tmp_path_factory) -> dict[str, dict]:
    """The metadata of a GGUF file of each architecture: the llama fixture file, and the
    qwen2, qwen3, gemma2, phi3, gemma3, granite and olmo2 folders written as the converter
    writes them."""
    out = {"llama": GgufFile(FIXTURES / "tiny-llama.gguf", tensors=False).metadata}
    for arch in GGUF_FOLDERS:
        path = folder_to_gguf(FIXTURES / f"tiny-{arch}", tmp_path_factory.mktemp(arch) / "m.gguf")
        out[arch] = GgufFile(path, tensors=False).metadata
    return out


def _refused_value(harmless: tuple) -> object:
    return (not harmless[0]) if harmless and isinstance(harmless[0], bool) else 7


GGUF_CASES = [(arch, name) for arch in ("llama", *GGUF_FOLDERS)
              for name in sorted(GGUF_REFUSED) if name not in GGUF_MODELLED[arch]]


@pytest.mark.parametrize(("arch", "name"), GGUF_CASES)
def test_a_refused_gguf_key_fails_in_one_line_naming_key_and_value(
        metadata, arch: str, name: str) -> None:
    harmless = GGUF_REFUSED[name][0]
    value = _refused_value(harmless)
    with pytest.raises(ModelError) as caught:
        spec_from_gguf({**metadata[arch], f"{arch}.{name}": value}, "m.gguf")
    message = str(caught.value)
    assert message.startswith(f"m.gguf: '{arch}.{name}' must be ") and "\n" not in message
    assert message.endswith(f"got {value!r}"), message
    for ok in harmless:
        assert (spec_from_gguf({**metadata[arch], f"{arch}.{name}": ok}, "m.gguf")
                == spec_from_gguf(metadata[arch], "m.gguf"))


def test_a_gguf_window_as_wide_as_the_context_is_let_through(metadata) -> None:
    """llama.cpp's llama pass reads no window: one that hides no key changes nothing, a
    narrower one is refused."""
    meta = metadata["llama"]
    context = meta["llama.context_length"]
    wide = spec_from_gguf({**meta, "llama.attention.sliding_window": context}, "m.gguf")
    assert wide == spec_from_gguf(meta, "m.gguf")
    with pytest.raises(ModelError, match=r"'llama\.attention\.sliding_window' must be absent"):
        spec_from_gguf({**meta, "llama.attention.sliding_window": context - 1}, "m.gguf")


def test_keys_unknown_to_gguf_py_and_other_namespaces_are_let_through(metadata) -> None:
    meta = {**metadata["qwen2"], "qwen2.some_future_note": 3, "general.name": "x",
            "general.sampling.temp": 0.7}
    assert spec_from_gguf(meta, "m.gguf") == spec_from_gguf(metadata["qwen2"], "m.gguf")


def test_a_lora_adapter_file_is_refused_naming_it(metadata) -> None:
    with pytest.raises(ModelError) as caught:
        spec_from_gguf({**metadata["llama"], "adapter.type": "lora"}, "a.gguf")
    assert str(caught.value) == ("a.gguf: 'adapter.type' must be absent (a LoRA adapter is "
                                 "not a model: open the model it adapts), got 'lora'")


def test_a_gguf_file_with_a_refused_key_fails_the_open_and_the_same_file_without_opens(
        tmp_path: Path, monkeypatch) -> None:
    """End to end through open_model: the tiny Qwen2 folder written by the converter's rules
    plus one key llama.cpp would read (two experts used per token)."""
    from tests.fixtures import gguf_convert

    plain = open_model(folder_to_gguf(FIXTURES / "tiny-qwen2", tmp_path / "plain.gguf"))
    write = gguf_convert._parameters

    def with_experts(writer, arch, *args) -> None:
        write(writer, arch, *args)
        writer.add_uint32(f"{arch}.expert_used_count", 2)

    monkeypatch.setattr(gguf_convert, "_parameters", with_experts)
    path = folder_to_gguf(FIXTURES / "tiny-qwen2", tmp_path / "experts.gguf")
    with pytest.raises(ModelError) as caught:
        open_model(path)
    assert str(caught.value) == ("experts.gguf: 'qwen2.expert_used_count' must be 0 "
                                 "(llama.cpp's 'expert_used_count' is not modelled for qwen2), "
                                 "got 2")
    assert plain.spec.architecture == "qwen2"
