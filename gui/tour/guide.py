"""The guided tour: a dockable panel that walks through the interview questions step by step.

Content lives in ``resources/tour/`` (found through :mod:`gui.kit.resources`, so it also works in
the PyInstaller bundle):

- ``tour.json`` — the steps in order: ``id``, ``view`` (the tab to bring forward; optional
  ``fallback_view`` when that tab may be missing), ``settings`` (AttentionConfig fields applied
  to the defaults), optional ``view_temperature`` (T of the temperature view), optional
  ``train_settings``/``lr_sweep`` (TrainConfig fields and sweep settings shown in the Train
  tab), and ``claims`` (see :mod:`engine.tour.claims`).
- ``tour.<language>.json`` — per UI language: ``steps[id]`` with ``title``, ``look`` (what to
  watch, shown in bold), ``body`` (paragraphs) and ``try`` (a "try it yourself" hint), plus
  ``labels`` for the claim quantities. ``{ui:Context|Text}`` in a text is shown as the UI
  currently labels that element (``translate(Context, Text)``).

Applying a step pushes its configuration into the parameter panel (``ParameterPanel.set_config``,
which blocks the widgets' signals) and the controller, switches the tab and flashes a frame
around it for two seconds. The claim numbers are recomputed by the engine on a background
Python thread (a learning-rate claim trains for about a second) and shown under the text.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QEvent, Qt, QTimer, Signal, Slot
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QFrame,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMenu,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from engine.config import AttentionConfig, ScalingRule
from engine.tour.claims import ClaimResult, describe_target, format_value
from engine.tour.evaluate import evaluate_claims
from engine.tour.steps import expand_ui_refs, step_config, validate_tour
from gui.kit import i18n
from gui.kit.i18n import translate

__all__ = [
    "HIGHLIGHT_MS",
    "TourData",
    "TourPanel",
    "install_tour",
    "load_tour",
]

_CTX = "TourPanel"
#: How long the frame around the step's view stays visible.
HIGHLIGHT_MS = 2000
#: Colour of that frame (the heatmap's row highlight: absent from every rule colour).
HIGHLIGHT_COLOR = "#ff00ff"
_FALLBACK_LANGUAGE = "en"


# ----------------------------------------------------------------------------------- content
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
        for lang in (self.resolve_language(language), _FALLBACK_LANGUAGE):
            step = self.texts.get(lang, {}).get("steps", {}).get(step_id)
            if step:
                return step
        return {"title": step_id, "look": "", "body": [], "try": ""}

    def label(self, language: str, quantity: str) -> str:
        """Display name of a claim quantity in ``language``."""
        for lang in (self.resolve_language(language), _FALLBACK_LANGUAGE):
            text = self.texts.get(lang, {}).get("labels", {}).get(quantity)
            if text:
                return str(text)
        return quantity


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
    """The language the UI is shown in (``gui.kit.i18n.current_language``; English without it)."""
    current = getattr(i18n, "current_language", None)
    if callable(current):
        try:
            return str(current()) or _FALLBACK_LANGUAGE
        except RuntimeError:  # no application yet
            return _FALLBACK_LANGUAGE
    return _FALLBACK_LANGUAGE


# ------------------------------------------------------------------------- claim evaluation
class _ClaimJob:
    """Evaluates one step's claims on a daemon Python thread (results polled by a QTimer).

    A plain daemon thread, not a QThread: it touches no Qt object, needs no event loop and
    cannot hold up application exit (a cancelled learning-rate claim stops within a step).
    """

    def __init__(self, claims: list[Mapping[str, Any]], config: AttentionConfig) -> None:
        self.cancel = threading.Event()
        self.results: list[ClaimResult] | None = None
        self.error = ""
        self._thread = threading.Thread(target=self._run, args=(claims, config),
                                        name="tour-claims", daemon=True)
        self._thread.start()

    def _run(self, claims: list[Mapping[str, Any]], config: AttentionConfig) -> None:
        try:
            self.results = evaluate_claims(claims, config, cancel=self.cancel)
        except (ValueError, RuntimeError, MemoryError) as exc:
            self.error = str(exc) or type(exc).__name__

    def done(self) -> bool:
        return not self._thread.is_alive()

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)


class _Highlight(QFrame):
    """A coloured frame laid over a widget for a moment; ignores the mouse."""

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("tourHighlight")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setStyleSheet(
            f"#tourHighlight {{ border: 4px solid {HIGHLIGHT_COLOR}; background: transparent; }}"
        )
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self.hide)

    def flash(self, target: QWidget, ms: int = HIGHLIGHT_MS) -> None:
        """Show the frame over ``target`` for ``ms`` milliseconds."""
        if self.parentWidget() is not target:
            self.setParent(target)
        self.setGeometry(target.rect())
        self.show()
        self.raise_()
        self._timer.start(ms)

    def stop(self) -> None:
        """Hide at once."""
        self._timer.stop()
        self.hide()


# ---------------------------------------------------------------------------------- the panel
class TourPanel(QWidget):
    """The guided-tour panel: step counter, title, what to look at, text, engine numbers.

    Parameters
    ----------
    window
        The main window (``panel``, ``controller``, ``show_view``, ``current_view``; optional
        ``train_tab``). ``None`` shows the texts without applying steps (used by tests).
    data
        The tour content (default: :func:`load_tour`).

    Signals
    -------
    stepChanged(int)
        The index of the step now shown (after its settings were applied).
    claimsEvaluated(int)
        The engine numbers of step ``index`` are shown.
    """

    stepChanged = Signal(int)
    claimsEvaluated = Signal(int)

    def __init__(self, window: Any = None, data: TourData | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("tourPanel")
        self._window = window
        self._data = data or load_tour()
        self._index = 0
        self._language_override: str | None = None
        self._results: dict[int, list[ClaimResult]] = {}
        self._errors: dict[int, str] = {}
        self._job: _ClaimJob | None = None
        self._job_index = -1
        self._highlight = _Highlight()

        self.counter_label = QLabel()
        self.counter_label.setObjectName("tourCounter")
        self.title_label = QLabel()
        self.title_label.setObjectName("tourTitle")
        self.title_label.setWordWrap(True)
        self.title_label.setTextFormat(Qt.TextFormat.PlainText)
        font = self.title_label.font()
        font.setPointSizeF(font.pointSizeF() * 1.25)
        font.setBold(True)
        self.title_label.setFont(font)
        self.look_label = self._text_label("tourLook")
        self.body_label = self._text_label("tourBody")
        self.engine_label = self._text_label("tourEngine")
        self.engine_label.setStyleSheet(
            "QLabel#tourEngine { background: #f2f5f9; border: 1px solid #c8d0da; "
            "border-radius: 4px; padding: 6px; color: #1a1a1a; }"
        )
        self.try_label = self._text_label("tourTry")
        self.back_button = QPushButton()
        self.back_button.setObjectName("tourBack")
        self.next_button = QPushButton()
        self.next_button.setObjectName("tourNext")
        self.next_button.setDefault(True)
        self.back_button.clicked.connect(self.previous_step)
        self.next_button.clicked.connect(self.next_step)

        content = QWidget()
        column = QVBoxLayout(content)
        column.setContentsMargins(8, 4, 8, 4)
        for widget in (self.title_label, self.look_label, self.body_label, self.engine_label,
                       self.try_label):
            column.addWidget(widget)
        column.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(content)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)

        buttons = QHBoxLayout()
        buttons.addWidget(self.back_button)
        buttons.addStretch(1)
        buttons.addWidget(self.counter_label)
        buttons.addStretch(1)
        buttons.addWidget(self.next_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(4, 4, 4, 4)
        layout.addLayout(buttons)
        layout.addWidget(scroll, 1)

        self._poll = QTimer(self)
        self._poll.setInterval(40)
        self._poll.timeout.connect(self._poll_job)
        self.retranslate_ui()

    @staticmethod
    def _text_label(name: str) -> QLabel:
        label = QLabel()
        label.setObjectName(name)
        label.setWordWrap(True)
        label.setTextFormat(Qt.TextFormat.RichText)
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        label.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        return label

    # ----------------------------------------------------------------------------- public API
    def data(self) -> TourData:
        """The tour content."""
        return self._data

    def step_count(self) -> int:
        """Number of steps."""
        return len(self._data.steps)

    def step_index(self) -> int:
        """Index (0-based) of the step shown."""
        return self._index

    def step(self) -> Mapping[str, Any]:
        """The step shown (its ``tour.json`` entry)."""
        return self._data.steps[self._index]

    def step_config(self) -> AttentionConfig:
        """The configuration the shown step applies."""
        return step_config(self.step().get("settings", {}))

    def language(self) -> str:
        """The language of the tour texts (the UI language unless overridden)."""
        return self._data.resolve_language(self._language_override or ui_language())

    def set_language(self, code: str | None) -> None:
        """Show the texts in ``code`` (``None``: follow the UI language again)."""
        self._language_override = code
        self._render()

    def start(self) -> None:
        """Apply and show the current step (called when the tour is opened)."""
        self.go_to(self._index)

    @Slot()
    def next_step(self) -> None:
        """Go to the next step (no-op on the last one)."""
        if self._index + 1 < self.step_count():
            self.go_to(self._index + 1)

    @Slot()
    def previous_step(self) -> None:
        """Go to the previous step (no-op on the first one)."""
        if self._index > 0:
            self.go_to(self._index - 1)

    def go_to(self, index: int) -> None:
        """Show step ``index``: apply its settings, switch the tab, highlight, evaluate claims."""
        if not 0 <= index < self.step_count():
            raise ValueError(f"step index must be in [0, {self.step_count() - 1}], got {index}")
        self._index = index
        self._apply_step()
        self._render()
        self._evaluate()
        self.stepChanged.emit(index)

    def claim_results(self, index: int | None = None) -> list[ClaimResult] | None:
        """Engine results of step ``index`` (default: the current one), None if not ready."""
        return self._results.get(self._index if index is None else index)

    def shutdown(self, timeout_s: float = 1.0) -> None:
        """Cancel a running claim evaluation and wait for it (bounded)."""
        self._poll.stop()
        self._highlight.stop()
        job = self._job
        if job is not None:
            job.cancel.set()
            job.join(timeout_s)
        self._job = None

    # ----------------------------------------------------------------------------- translation
    def retranslate_ui(self) -> None:
        """Set the chrome texts in the current language and re-render the step."""
        self.back_button.setText(translate("TourPanel", "◀ Back"))
        self.next_button.setText(translate("TourPanel", "Next ▶"))
        self.back_button.setToolTip(translate("TourPanel", "Previous step (Alt+Left)"))
        self.next_button.setToolTip(translate("TourPanel", "Next step (Alt+Right)"))
        self.back_button.setShortcut(QKeySequence("Alt+Left"))
        self.next_button.setShortcut(QKeySequence("Alt+Right"))
        self._render()

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """Follow the application's language."""
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate_ui()
        super().changeEvent(event)

    # ---------------------------------------------------------------------------------- steps
    def _apply_step(self) -> None:
        window = self._window
        if window is None:
            return
        step = self.step()
        config = self.step_config()
        window.panel.set_config(config)
        temperature = step.get("view_temperature")
        if temperature is not None:
            window.controller.set_temperature(float(temperature))
        window.controller.set_config(config)
        self._apply_train_settings(step)
        shown = window.show_view(str(step["view"]))
        if not shown and "fallback_view" in step:
            shown = window.show_view(str(step["fallback_view"]))
        if shown:
            target = window.current_view()
            if isinstance(target, QWidget):
                self._highlight.flash(target)

    def _apply_train_settings(self, step: Mapping[str, Any]) -> None:
        train_tab = getattr(self._window, "train_tab", None)
        panel = getattr(train_tab, "panel", None)
        if panel is None:
            return
        if "train_settings" in step and hasattr(panel, "set_config"):
            from engine.config.train import TrainConfig

            panel.set_config(TrainConfig.from_dict(dict(step["train_settings"])))
        sweep = step.get("lr_sweep")
        if sweep and hasattr(panel, "set_sweep_settings"):
            panel.set_sweep_settings(tuple(float(x) for x in sweep["lrs"]), int(sweep["seeds"]))

    def _evaluate(self) -> None:
        index = self._index
        if index in self._results:
            self.claimsEvaluated.emit(index)
            return
        if self._job is not None:
            if self._job_index == index:
                return
            self._job.cancel.set()  # a newer step wins; the old thread ends on its own
        self._job = _ClaimJob(list(self.step()["claims"]), self.step_config())
        self._job_index = index
        self._errors.pop(index, None)
        self._poll.start()

    @Slot()
    def _poll_job(self) -> None:
        job = self._job
        if job is None:
            self._poll.stop()
            return
        if not job.done():
            return
        self._poll.stop()
        self._job = None
        index = self._job_index
        if job.error:
            self._errors[index] = job.error
        elif job.results is not None and not any(math.isnan(r.value) for r in job.results):
            self._results[index] = job.results
        if index == self._index:
            self._render()
            self.claimsEvaluated.emit(index)

    # -------------------------------------------------------------------------------- render
    def _render(self) -> None:
        if not hasattr(self, "_data") or not self._data.steps:
            return
        lang = self.language()
        step = self.step()
        text = self._data.step_text(lang, str(step["id"]))

        def ui(value: Any) -> str:
            return _html(expand_ui_refs(str(value), translate))

        self.counter_label.setText(
            translate("TourPanel", "Step {0} / {1}").format(self._index + 1, self.step_count()))
        self.back_button.setEnabled(self._index > 0)
        self.next_button.setEnabled(self._index + 1 < self.step_count())
        self.title_label.setText(expand_ui_refs(str(text.get("title", "")), translate))
        # translate() calls stay outside f-strings so that pyside6-lupdate extracts them.
        look_head = _html(translate("TourPanel", "Look at:"))
        try_head = _html(translate("TourPanel", "Try it yourself:"))
        self.look_label.setText(f"{look_head} <b>{ui(text.get('look', ''))}</b>")
        self.body_label.setText("".join(f"<p>{ui(p)}</p>" for p in text.get("body", [])))
        self.try_label.setText(f"<i>{try_head}</i> {ui(text.get('try', ''))}")
        self.engine_label.setText(self._engine_html(lang))

    def engine_text(self) -> str:
        """The engine-numbers box as plain text (what the user reads; used by tests)."""
        from PySide6.QtGui import QTextDocument

        doc = QTextDocument()
        doc.setHtml(self.engine_label.text())
        return doc.toPlainText()

    def _engine_html(self, lang: str) -> str:
        head = "<b>" + _html(translate("TourPanel", "Engine says:")) + "</b>"
        index = self._index
        if index in self._errors:
            message = translate("TourPanel", "could not compute: {0}").format(self._errors[index])
            return f"{head} {_html(message)}"
        results = self._results.get(index)
        if results is None:
            waiting = translate("TourPanel", "computing…")
            return f"{head} {_html(waiting)}"
        lines = []
        for result in results:
            claim = result.claim
            mark = ("<span style='color:#1b7f3b'>✓</span>" if result.passed
                    else "<span style='color:#c0392b'>✗</span>")
            target = translate("TourPanel", "claim {0}").format(describe_target(claim))
            lines.append(
                f"{_html(self._data.label(lang, str(claim['quantity'])))} "
                f"[{_html(_claim_context(claim, self.step_config()))}]: "
                f"<b>{_html(format_value(result.value))}</b> {mark} "
                f"<span style='color:#555555'>({_html(target)})</span>"
            )
        return head + "<br>" + "<br>".join(lines)


def _claim_context(claim: Mapping[str, Any], config: AttentionConfig) -> str:
    """``rule, d_k = 1024, lr = 0.01``: what distinguishes a claim (the rule name translated)."""
    rule = claim.get("rule", config.rule)
    parts = [translate("ScalingRule", ScalingRule(rule).label)]
    for key, value in dict(claim.get("at", {})).items():
        parts.append(f"{key} = {value}")
    if "lr" in claim:
        parts.append(f"lr = {claim['lr']:g}")
    if "temperature" in claim:
        parts.append(f"T = {claim['temperature']:g}")
    return ", ".join(parts)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# ----------------------------------------------------------------------- main-window hookup
class _TourDock(QDockWidget):
    """The dock holding the tour panel; keeps its title and action text translated."""

    def __init__(self, panel: TourPanel, action: QAction, parent: QMainWindow) -> None:
        super().__init__(parent)
        self.setObjectName("tourDock")
        self.panel = panel
        self._action = action
        self.setWidget(panel)
        self.retranslate_ui()

    def retranslate_ui(self) -> None:
        """Dock title and menu entry in the current language."""
        self.setWindowTitle(translate("TourPanel", "Guided tour"))
        self._action.setText(translate("TourPanel", "&Guided tour"))
        self._action.setStatusTip(
            translate("TourPanel", "Step through the interview questions with live experiments"))

    def changeEvent(self, event: QEvent) -> None:  # Qt override
        """Follow the application's language."""
        if event.type() == QEvent.Type.LanguageChange:
            self.retranslate_ui()
        super().changeEvent(event)


def install_tour(window: QMainWindow, menu: QMenu) -> tuple[QDockWidget, QAction]:
    """Add the hidden "Guided tour" dock to ``window`` and its action (F1, Ctrl+G) to ``menu``.

    Triggering the action shows the dock and applies the current step; the panel's claim
    thread is cancelled when the dock is destroyed.
    """
    action = QAction(window)
    action.setShortcuts([QKeySequence("F1"), QKeySequence("Ctrl+G")])
    panel = TourPanel(window)
    dock = _TourDock(panel, action, window)
    dock.setMinimumWidth(340)
    window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
    dock.hide()

    def open_tour() -> None:
        if dock.isHidden():
            _place_dock(window, dock)
        dock.show()
        dock.raise_()
        panel.start()

    action.triggered.connect(open_tour)
    menu.addAction(action)
    # Cancel the evaluation thread with the window. Only Python state is touched: the panel's
    # C++ object is already gone when ``destroyed`` arrives.
    window.destroyed.connect(lambda *_: _cancel_job(panel))
    return dock, action


#: Narrowest central area (px) left beside both docks; below it the tour shares the left dock
#: area with the parameters (as tabs) instead of taking a column of its own.
MIN_CENTRAL_WIDTH = 560


def _place_dock(window: QMainWindow, dock: QDockWidget) -> None:
    """Put the tour beside the views if the window is wide enough, else tab it with the
    parameter dock: at 1024×768 two dock columns left ~350 px for the views and pushed the
    window wider than the screen (issue 8, §4)."""
    if dock.isFloating():
        return
    parameters = window.findChild(QDockWidget, "parameterDock")
    if parameters is None or parameters.isFloating():
        return
    needed = (parameters.minimumSizeHint().width() + dock.minimumWidth()
              + MIN_CENTRAL_WIDTH)
    area = window.dockWidgetArea(dock)
    if window.width() < needed:
        if dock not in window.tabifiedDockWidgets(parameters):
            window.tabifyDockWidget(parameters, dock)
    elif area != Qt.DockWidgetArea.RightDockWidgetArea:
        window.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)


def _cancel_job(panel: TourPanel) -> None:
    job = panel.__dict__.get("_job")
    if job is not None:
        job.cancel.set()
