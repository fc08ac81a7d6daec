"""Which layers attend through a sliding window, read as each family's transformers config does.

A layer with window w lets query i see keys max(0, i − w + 1) … i: w keys once i ≥ w − 1
(transformers' ``sliding_window_overlay``: key j is kept iff j > i − w). A layer without one
sees every earlier key. The families differ only in which layers slide:

* Mistral: every layer, when ``sliding_window`` is set (absent: 4096, as ``MistralConfig``;
  null: none). ``MistralModel`` builds one mask for all layers and ignores ``layer_types``.
* Qwen2 / Qwen3: ``sliding_window`` only counts with ``use_sliding_window``; the layers from
  ``max_window_layers`` (default 28) on slide, those before it see everything.
* Gemma 2: ``sliding_window`` (absent: 4096) on layers 0, 2, 4, … (``(i + 1) % 2``); the odd
  layers see everything.
* Phi-3: ``sliding_window`` on every layer when set (absent or null: none, as
  ``Phi3Config``); ``Phi3Model`` builds one mask for all layers.
* Gemma 3: ``sliding_window`` (absent: 4096) on every layer but each
  ``sliding_window_pattern``-th (default 6: five of six slide), as ``Gemma3TextConfig``.
* Llama, BERT, GPT-2, OLMo 2, Granite: no window (their models never build a sliding mask).

A config's own ``layer_types`` list overrides the pattern (except for Mistral and Phi-3, as
above).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from engine.models.values import Values

__all__ = ["LAYER_KINDS", "layer_windows"]

#: The attention kinds of ``layer_types`` this app models.
LAYER_KINDS = ("full_attention", "sliding_attention")
#: The window transformers' Mistral and Gemma 2 configs assume when the key is absent.
DEFAULT_WINDOW = 4096
#: Qwen2's and Qwen3's default ``max_window_layers``.
DEFAULT_FULL_LAYERS = 28
#: Gemma 3's default ``sliding_window_pattern``: every sixth layer sees every earlier key.
GEMMA3_PATTERN = 6


def _window(values: Values, high: int) -> int | None:
    """``sliding_window``: absent → the default; null → no window."""
    if values.written("sliding_window") and not values.has("sliding_window"):
        return None
    return values.whole("sliding_window", default=DEFAULT_WINDOW, high=high)


def _layer_types(values: Values, layers: int) -> list[str] | None:
    """The config's ``layer_types``, checked: one known kind per layer."""
    key, kinds = values.raw("layer_types")
    if kinds is None:
        return None
    if not isinstance(kinds, list) or len(kinds) != layers:
        raise values.refuse(key, kinds, f"a list of {layers} attention kinds, one per layer")
    for i, kind in enumerate(kinds):
        if kind not in LAYER_KINDS:
            raise values.refuse(f"{key}[{i}]", kind, "one of " + ", ".join(LAYER_KINDS))
    return kinds


def _qwen(values: Values, layers: int, high: int) -> tuple[int | None, list[bool]]:
    use = values.flag("use_sliding_window", default=False)
    window = _window(values, high) if use else None
    start = (values.whole("max_window_layers", default=DEFAULT_FULL_LAYERS, low=0,
                          high=1 << 20) if window is not None else layers)
    return window, [i >= start for i in range(layers)]


def _gemma2(values: Values, layers: int, high: int) -> tuple[int | None, list[bool]]:
    return _window(values, high), [i % 2 == 0 for i in range(layers)]


def _gemma3(values: Values, layers: int, high: int) -> tuple[int | None, list[bool]]:
    window = _window(values, high)
    every = values.whole("sliding_window_pattern", default=GEMMA3_PATTERN, high=1 << 20)
    return window, [bool((i + 1) % every) for i in range(layers)]


#: Families whose one mask serves every layer (their models ignore ``layer_types``): the
#: window all layers share.
_EVERY_LAYER: Mapping[str, Callable[[Values, int], int | None]] = {
    "mistral": _window,
    "phi3": lambda values, high: values.whole("sliding_window", default=None, high=high),
}
#: Families whose layers slide by a pattern, which ``layer_types`` overrides: the window and
#: whether each layer slides.
_PATTERNED: Mapping[str, Callable[[Values, int, int], tuple[int | None, list[bool]]]] = {
    "qwen2": _qwen, "qwen3": _qwen, "gemma2": _gemma2, "gemma3_text": _gemma3,
}


def layer_windows(values: Values, arch: str, layers: int, high: int) -> tuple[int | None, ...]:
    """The sliding window of each layer of a Hugging Face config (None: full causal).

    ``arch`` is the config's ``model_type``; ``high`` bounds a window (the most positions a
    config may give).

    Raises
    ------
    engine.models.weights.ModelError
        For a window or ``layer_types`` of the wrong type or range, or sliding layers without
        a window (transformers cannot build their mask either).
    """
    if arch in _EVERY_LAYER:
        return (_EVERY_LAYER[arch](values, high),) * layers
    if arch not in _PATTERNED:
        return (None,) * layers
    window, pattern = _PATTERNED[arch](values, layers, high)
    kinds = _layer_types(values, layers)
    if kinds is not None:
        pattern = [kind == "sliding_attention" for kind in kinds]
    if window is None and any(pattern):
        # transformers fails here too: it cannot build a sliding mask without a window.
        raise values.refuse("layer_types", kinds,
                            "full_attention only while 'sliding_window' is null (or, for "
                            "Qwen, 'use_sliding_window' is false)")
    return tuple(window if slides else None for slides in pattern)
