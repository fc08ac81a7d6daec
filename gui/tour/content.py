"""The guided tour's content: steps from ``tour.json`` and texts per UI language.

Content lives in ``resources/tour/`` (found through :mod:`gui.kit.resources`, so it also works in
the PyInstaller bundle):

- ``tour.json`` — the steps in order: ``id``, ``view`` (the tab to bring forward; optional
  ``fallback_view`` when that tab may be missing), ``settings`` (AttentionConfig fields applied
  to the defaults), optional ``view_temperature`` (T of the temperature view), optional
  ``train_settings``/``lr_sweep`` (TrainConfig fields and sweep settings shown in the Train
  tab), optional ``run_training`` (true: the step starts a run of those settings, stopped when
  the tour moves on), optional ``run_model`` (true: the Model tab runs on an installed sample
  model, or the engine box names the pip command that installs one), ``claims`` (see
  :mod:`engine.tour.claims`), and ``formulas`` / ``given`` (the numbers of the texts that no
  claim computes, checked by ``tests/engine/tour_prose.py``).
- ``tour.<language>.json`` — per UI language: ``steps[id]`` with ``title``, ``look`` (what to
  watch, shown in bold), ``body`` (paragraphs) and ``try`` (a "try it yourself" hint), plus
  ``labels`` for the claim quantities. ``{ui:Context|Text}`` in a text is shown as the UI
  currently labels that element (``translate(Context, Text)``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.config import AttentionConfig, ScalingRule
from engine.tour.claims import RULELESS_QUANTITIES
from engine.tour.steps import validate_tour
from gui.kit import i18n
from gui.kit.i18n import translate

__all__ = ["TourData", "claim_context", "load_tour", "ui_language"]

_FALLBACK_LANGUAGE = "en"


@dataclass(frozen=True)
class TourData:
    """The parsed tour: steps (from ``tour.json``) and texts per language code."""

    steps: tuple[Mapping[str, Any], ...]
    texts: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def languages(self) -> list[str]:
        """Language codes that have texts (English first)."""
        return sorted(self.texts, key=lambda code: (code != _FALLBACK_LANGUAGE, code))

    def resolve_language(self, code: str | None) -> str:
        """The available language for ``code``: exact, then same base language, else English."""
        if code in self.texts:
            return str(code)
        base = str(code or "").replace("-", "_").split("_")[0].lower()
        for lang in self.languages():
            if base and lang.split("_")[0].lower() == base:
                return lang
        return _FALLBACK_LANGUAGE

    def step_text(self, language: str, step_id: str) -> Mapping[str, Any]:
        """Texts of ``step_id`` in ``language`` (English when that language lacks the step)."""
        return self._lookup(language, "steps", step_id) or {
            "title": step_id, "look": "", "body": [], "try": ""}

    def label(self, language: str, quantity: str) -> str:
        """Display name of a claim quantity in ``language``."""
        return str(self._lookup(language, "labels", quantity) or quantity)

    def _lookup(self, language: str, section: str, key: str) -> Any:
        """``texts[language][section][key]``, else English's, else None."""
        for lang in (self.resolve_language(language), _FALLBACK_LANGUAGE):
            found = self.texts.get(lang, {}).get(section, {}).get(key)
            if found:
                return found
        return None


def load_tour(folder: str | Path | None = None) -> TourData:
    """Read ``tour.json`` and every ``tour.<language>.json`` from ``folder``.

    Parameters
    ----------
    folder
        Default: ``resources/tour`` via :func:`gui.kit.resources.resource_path`.

    Raises
    ------
    gui.kit.resources.ResourceError
        If a file is missing, unreadable or malformed (``tour.json``: see
        :func:`engine.tour.claims.validate_tour`); the program cannot start without the tour.
    """
    from gui.kit.resources import ResourceError, resource_path

    folder = Path(resource_path("tour") if folder is None else folder)
    current = folder / "tour.json"
    try:
        tour = json.loads(current.read_text(encoding="utf-8"))
        validate_tour(tour)
        steps = tuple(tour["steps"])
        texts: dict[str, Mapping[str, Any]] = {}
        for current in sorted(folder.glob("tour.*.json")):
            data = json.loads(current.read_text(encoding="utf-8"))
            texts[str(data.get("language") or current.name.split(".")[1])] = data
    except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise ResourceError(f"damaged or unreadable tour file {current}: "
                            f"{exc or type(exc).__name__}") from exc
    return TourData(steps=steps, texts=texts)


def ui_language() -> str:
    """The language the UI is shown in (English when none is set)."""
    return i18n.current_language() or _FALLBACK_LANGUAGE


def claim_context(claim: Mapping[str, Any], config: AttentionConfig) -> str:
    """``rule, d_k = 1024, lr = 0.01``: what distinguishes a claim (the rule name translated).

    Lists the claim's rule (unless its quantity has none), config overrides, its logit std and
    p_max threshold (sweep claims), number format, softmax form and rounding (precision
    claims), its n (length claims) and its training overrides and learning rate, so two claims
    of one step never look alike.
    """
    parts = []
    if claim.get("quantity") not in RULELESS_QUANTITIES:
        rule = claim.get("rule", config.rule)
        parts.append(translate("ScalingRule", ScalingRule(rule).label))
    for key, value in dict(claim.get("at", {})).items():
        parts.append(f"{key} = {value}")
    if "logit_std" in claim:  # logits drawn directly with this standard deviation
        parts.append(f"s = {claim['logit_std']:g}")
    if "threshold" in claim:
        parts.append(f"p_max > {claim['threshold']:g}")
    if "dtype" in claim:  # the format's name, as the Precision view's selector shows it
        parts.append(str(claim["dtype"]))
    if claim.get("softmax") == "naive":  # the Precision view's names of the two forms
        parts.append(translate("PrecisionView", "naive exp(z)"))
    elif claim.get("softmax") == "stable":
        parts.append(translate("PrecisionView", "max subtracted (stable)"))
    if claim.get("rounding") == "logits":
        parts.append(translate("PrecisionView", "only the logits rounded"))
    if "n" in claim:
        parts.append(f"n = {claim['n']}")
    at = dict(claim.get("at", {}))
    if str(claim.get("quantity")).startswith("ssmax_toy_") and "ssmax_s" not in at:
        parts.append(f"SSMax s = {config.ssmax_s:g}")
    if claim.get("quantity") == "yarn_logit_factor" and "yarn_factor" not in at:
        parts.append(f"f = {config.yarn_factor:g}")
    for key, value in dict(claim.get("train", {})).items():  # the trained model's overrides
        parts.append(f"{key} = {value}")
    if "lr" in claim:
        parts.append(f"lr = {claim['lr']:g}")
    if "temperature" in claim:
        parts.append(f"T = {claim['temperature']:g}")
    return ", ".join(parts)
