"""Build whichever config a dictionary or JSON text names by its ``kind``."""

from __future__ import annotations

import json
from typing import Any

from engine.config.attention import AttentionConfig
from engine.config.base import JsonConfig
from engine.config.sweep import SweepConfig
from engine.config.train import TrainConfig

__all__ = ["CONFIG_KINDS", "config_from_dict", "config_from_json"]

#: Every config class by its ``kind`` tag.
CONFIG_KINDS: dict[str, type[JsonConfig]] = {
    cls.kind: cls for cls in (AttentionConfig, SweepConfig, TrainConfig)
}


def config_from_dict(data: Any) -> JsonConfig:
    """Build whichever config ``data["kind"]`` names."""
    if not isinstance(data, dict) or "kind" not in data:
        raise ValueError("config data must be an object with a 'kind' field")
    cls = CONFIG_KINDS.get(data["kind"])
    if cls is None:
        raise ValueError(
            f"unknown config kind {data['kind']!r}; expected one of {', '.join(CONFIG_KINDS)}"
        )
    return cls.from_dict(data)


def config_from_json(text: str) -> JsonConfig:
    """Parse JSON written by any config's ``to_json``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    return config_from_dict(data)
