"""Immutable, validated configurations: the only contract between the GUI and the engine.

Every config is a frozen dataclass that checks its fields on construction and raises a
``ValueError`` naming the field and the allowed range. Configs round-trip through plain
dictionaries and JSON so that sessions can be saved and reloaded.
"""

from __future__ import annotations

import dataclasses
import json
import math
from enum import StrEnum
from typing import Any, ClassVar, Self, TypeVar

__all__ = [
    "DEFAULT_MEMORY_BUDGET_BYTES",
    "LIMITS",
    "AttentionConfig",
    "MaskKind",
    "ScalingRule",
    "SweepConfig",
    "SweepParam",
    "config_from_dict",
    "config_from_json",
]

#: Largest attention-matrix footprint a single request may allocate unless told otherwise.
DEFAULT_MEMORY_BUDGET_BYTES = 1 << 30

#: Inclusive (low, high) limits shared by validation, the GUI widgets and the CLI.
LIMITS: dict[str, tuple[float, float]] = {
    "n_tokens": (1, 8192),
    "d_k": (1, 8192),
    "heads": (1, 64),
    "d_model": (1, 16384),
    "init_std": (1e-6, 1e3),
    "projection_std": (1e-6, 1e3),
    "temperature": (1e-6, 1e6),
    "gain": (1e-6, 1e6),
    "cap": (1e-6, 1e6),
    "rho": (-1.0, 1.0),
    "logit_std": (0.0, 1e6),
    "seed": (0, 2**32 - 1),
    "samples": (1, 10_000_000),
}


class ScalingRule(StrEnum):
    """How raw dot products ``q·k`` become logits before the softmax."""

    NONE = "none"
    """c = 1: the raw dot product."""
    SQRT = "sqrt"
    """c = 1/√d_k: the Transformer's rule, unit-variance logits at init."""
    LINEAR = "linear"
    """c = 1/d_k: the μP rule, right once q and k are correlated."""
    TEMPERATURE = "temperature"
    """Divide by a temperature T; T = √d_k reproduces ``SQRT`` exactly."""
    QK_NORM = "qk_norm"
    """ℓ₂-normalise q and k over d_k, then multiply by a gain g (default √d_k)."""
    SOFTCAP = "softcap"
    """1/√d_k, then ``cap·tanh(s/cap)`` (Gemma 2 style)."""

    @property
    def label(self) -> str:
        """Short human-readable name used in legends and CSV files."""
        return _RULE_LABELS[self]


_RULE_LABELS = {
    ScalingRule.NONE: "none",
    ScalingRule.SQRT: "1/√d_k",
    ScalingRule.LINEAR: "1/d_k",
    ScalingRule.TEMPERATURE: "1/T",
    ScalingRule.QK_NORM: "QK-norm",
    ScalingRule.SOFTCAP: "soft-cap",
}


class MaskKind(StrEnum):
    """Which keys a query may attend to."""

    NONE = "none"
    CAUSAL = "causal"


_E = TypeVar("_E", bound=StrEnum)


class SweepParam(StrEnum):
    """The quantity a sweep varies."""

    D_K = "d_k"
    S = "s"
    RHO = "rho"
    N = "n"


def _check_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        # Accept integral floats coming from JSON or spin boxes, refuse anything else.
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name} must be an integer, got {value!r}")
    low, high = LIMITS[name]
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{int(low)}, {int(high)}], got {value}")
    return value


def _check_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{name} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    low, high = LIMITS[name]
    if not low <= value <= high:
        raise ValueError(f"{name} must be in [{low:g}, {high:g}], got {value:g}")
    return value


def _check_enum(name: str, enum: type[_E], value: Any) -> _E:
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum)
        raise ValueError(f"{name} must be one of {allowed}; got {value!r}") from None


class _JsonConfig:
    """Dictionary/JSON round trip shared by every config class."""

    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dictionary, tagged with the config kind."""
        out: dict[str, Any] = {"kind": self.kind}
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            value = getattr(self, field.name)
            if isinstance(value, StrEnum):
                value = value.value
            elif isinstance(value, tuple):
                value = [v.value if isinstance(v, StrEnum) else v for v in value]
            out[field.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Build a config from :meth:`to_dict` output, refusing unknown or foreign keys."""
        if not isinstance(data, dict):
            raise ValueError(f"{cls.__name__} data must be an object, got {type(data).__name__}")
        data = dict(data)
        kind = data.pop("kind", cls.kind)
        if kind != cls.kind:
            raise ValueError(f"expected a {cls.kind!r} config, got kind {kind!r}")
        names = {field.name for field in dataclasses.fields(cls)}  # type: ignore[arg-type]
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown {cls.kind} field(s): {', '.join(unknown)}")
        for key, value in data.items():
            if isinstance(value, list):
                data[key] = tuple(value)
        return cls(**data)

    def to_json(self) -> str:
        """Serialise to a JSON string."""
        return json.dumps(self.to_dict(), indent=2, ensure_ascii=False)

    @classmethod
    def from_json(cls, text: str) -> Self:
        """Parse a JSON string written by :meth:`to_json`."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not valid JSON: {exc}") from None
        return cls.from_dict(data)


@dataclasses.dataclass(frozen=True, slots=True)
class AttentionConfig(_JsonConfig):
    """One attention experiment: random q, k (optionally through projections), one rule.

    Parameters
    ----------
    n_tokens
        Number of tokens n (queries and keys).
    d_k
        Head dimension. When ``link_heads`` is true it is derived as ``d_model // heads``.
    heads
        Number of attention heads h.
    d_model
        Model width; must be divisible by ``heads``.
    link_heads
        Derive ``d_k = d_model / heads`` instead of using ``d_k`` as given.
    init_std
        Standard deviation σ of the iid components of q and k (when not projecting).
    use_projection
        Draw x ~ N(0, I_{d_model}) and q = x W_Q, k = x W_K with W ~ N(0, s²).
    projection_std
        The projection init std s; then Var(q_j) = d_model·s².
    rule
        The scaling rule (see :class:`ScalingRule`).
    temperature, gain, cap
        Parameters of the temperature, QK-norm and soft-cap rules. ``gain=None`` means √d_k.
    rho
        Correlation between q and k: k = ρ·q + √(1−ρ²)·ξ.
    mask
        ``"none"`` or ``"causal"``.
    query_row
        The query whose softmax distribution is inspected.
    seed
        Seed of every random draw of this experiment.
    samples
        Number of independent query rows used for statistics.
    """

    kind: ClassVar[str] = "attention"

    n_tokens: int = 64
    d_k: int = 64
    heads: int = 1
    d_model: int = 64
    link_heads: bool = False
    init_std: float = 1.0
    use_projection: bool = False
    projection_std: float = 0.125
    rule: ScalingRule = ScalingRule.SQRT
    temperature: float = 8.0
    gain: float | None = None
    cap: float = 50.0
    rho: float = 0.0
    mask: MaskKind = MaskKind.NONE
    query_row: int = 0
    seed: int = 0
    samples: int = 2000

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("n_tokens", "d_k", "heads", "d_model", "seed", "samples"):
            set_(self, name, _check_int(name, getattr(self, name)))
        for name in ("init_std", "projection_std", "temperature", "cap", "rho"):
            set_(self, name, _check_float(name, getattr(self, name)))
        if self.gain is not None:
            set_(self, "gain", _check_float("gain", self.gain))
        for name in ("link_heads", "use_projection"):
            if not isinstance(getattr(self, name), bool):
                raise ValueError(f"{name} must be true or false, got {getattr(self, name)!r}")
        set_(self, "rule", _check_enum("rule", ScalingRule, self.rule))
        set_(self, "mask", _check_enum("mask", MaskKind, self.mask))
        if self.d_model % self.heads:
            raise ValueError(
                f"d_model ({self.d_model}) must be divisible by heads ({self.heads})"
            )
        if self.link_heads:
            set_(self, "d_k", self.d_model // self.heads)
        if isinstance(self.query_row, bool) or not isinstance(self.query_row, int):
            raise ValueError(f"query_row must be an integer, got {self.query_row!r}")
        if not 0 <= self.query_row < self.n_tokens:
            raise ValueError(
                f"query_row must be in [0, {self.n_tokens - 1}] (n_tokens - 1), "
                f"got {self.query_row}"
            )

    @property
    def component_std(self) -> float:
        """Standard deviation of one component of q (and of k) at init."""
        if self.use_projection:
            return math.sqrt(self.d_model) * self.projection_std
        return self.init_std

    def replace(self, **changes: Any) -> AttentionConfig:
        """Return a validated copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)


@dataclasses.dataclass(frozen=True, slots=True)
class SweepConfig(_JsonConfig):
    """A sweep of one parameter over values, for several scaling rules.

    Parameters
    ----------
    param
        The swept quantity: ``d_k``, ``s`` (std of the unscaled logits), ``rho`` or ``n``.
    values
        The values of ``param``; integers for ``d_k`` and ``n``.
    rules
        The scaling rules evaluated at every value.
    n_tokens, d_k, rho, logit_std
        The fixed values of the quantities not swept (``logit_std`` is used for ``s``: it is
        the std of the unscaled logits when ``param`` is not ``s``, ``None`` meaning the value
        implied by unit-variance q and k, i.e. √d_k).
    samples
        Number of query rows per point.
    seed
        Seed of the whole sweep; every point derives its own stream from it.
    temperature, gain, cap
        Rule parameters, as in :class:`AttentionConfig`. ``temperature=None`` means √d_k.
    memory_budget_bytes
        Largest working set one chunk may allocate.
    """

    kind: ClassVar[str] = "sweep"

    param: SweepParam = SweepParam.D_K
    values: tuple[float, ...] = tuple(2.0**i for i in range(13))
    rules: tuple[ScalingRule, ...] = (ScalingRule.NONE, ScalingRule.SQRT, ScalingRule.LINEAR)
    n_tokens: int = 64
    d_k: int = 64
    rho: float = 0.0
    logit_std: float | None = None
    samples: int = 20_000
    seed: int = 0
    temperature: float | None = None
    gain: float | None = None
    cap: float = 50.0
    memory_budget_bytes: int = DEFAULT_MEMORY_BUDGET_BYTES

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "param", _check_enum("param", SweepParam, self.param))
        for name in ("n_tokens", "d_k", "seed", "samples"):
            set_(self, name, _check_int(name, getattr(self, name)))
        for name in ("rho", "cap"):
            set_(self, name, _check_float(name, getattr(self, name)))
        for name in ("temperature", "gain"):
            if getattr(self, name) is not None:
                set_(self, name, _check_float(name, getattr(self, name)))
        if self.logit_std is not None:
            set_(self, "logit_std", _check_float("logit_std", self.logit_std))
        rules = tuple(self.rules) if not isinstance(self.rules, str) else (self.rules,)
        if not rules:
            raise ValueError("rules must name at least one scaling rule")
        set_(self, "rules", tuple(_check_enum("rules", ScalingRule, r) for r in rules))
        values = tuple(self.values) if not isinstance(self.values, int | float) else (self.values,)
        if not values:
            raise ValueError("values must hold at least one value")
        checked: list[float] = []
        for value in values:
            if self.param in (SweepParam.D_K, SweepParam.N):
                name = "d_k" if self.param is SweepParam.D_K else "n_tokens"
                checked.append(_check_int(name, value))
            elif self.param is SweepParam.RHO:
                checked.append(_check_float("rho", value))
            else:
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError(f"values for s must be numbers, got {value!r}")
                if not (math.isfinite(value) and 0 <= value <= 1e6):
                    raise ValueError(f"values for s must be in [0, 1e6], got {value}")
                checked.append(float(value))
        set_(self, "values", tuple(checked))
        if isinstance(self.memory_budget_bytes, bool) or not isinstance(
            self.memory_budget_bytes, int
        ) or self.memory_budget_bytes < 1:
            raise ValueError(
                f"memory_budget_bytes must be a positive integer, got {self.memory_budget_bytes!r}"
            )

    def replace(self, **changes: Any) -> SweepConfig:
        """Return a validated copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)


_CONFIG_KINDS: dict[str, type[_JsonConfig]] = {
    AttentionConfig.kind: AttentionConfig,
    SweepConfig.kind: SweepConfig,
}


def register_config_kind(cls: type[_JsonConfig]) -> type[_JsonConfig]:
    """Make :func:`config_from_dict` know another config class (used by the trainer)."""
    _CONFIG_KINDS[cls.kind] = cls
    return cls


def config_from_dict(data: Any) -> _JsonConfig:
    """Build whichever config ``data["kind"]`` names."""
    if not isinstance(data, dict) or "kind" not in data:
        raise ValueError("config data must be an object with a 'kind' field")
    if data["kind"] == "train" and "train" not in _CONFIG_KINDS:
        # The trainer's config registers itself on import; import it on first need so that
        # loading a saved training session works without importing the trainer beforehand.
        import engine.config.train  # noqa: F401
    cls = _CONFIG_KINDS.get(data["kind"])
    if cls is None:
        raise ValueError(
            f"unknown config kind {data['kind']!r}; expected one of {', '.join(_CONFIG_KINDS)}"
        )
    return cls.from_dict(data)


def config_from_json(text: str) -> _JsonConfig:
    """Parse JSON written by any config's ``to_json``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON: {exc}") from None
    return config_from_dict(data)
