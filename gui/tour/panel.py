"""The guided tour panel: step counter, title, what to look at, text and live engine numbers.

Applying a step pushes its configuration into the window through the narrow
:class:`~gui.tour.host.TourHost` interface (the parameter panel blocks its widgets' signals),
switches the tab and flashes a frame around it for two seconds. The claim numbers are
recomputed by the engine off the GUI thread (:class:`~gui.tour.claims_job.ClaimEvaluations`)
and shown under the text.
"""

from __future__ import annotations

import functools
import html
from collections.abc import Mapping
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal, Slot
from PySide6.QtGui import QKeySequence, QTextDocument
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from engine.config import AttentionConfig
from engine.tour.claims import ClaimResult, describe_target, format_claim_value
from engine.tour.steps import expand_ui_refs, step_config
from gui.kit.i18n import Retranslating, translate
from gui.tour.claims_job import ClaimEvaluations
from gui.tour.content import TourData, claim_context, load_tour, ui_language
from gui.tour.highlight import Highlight
from gui.tour.host import TourHost

__all__ = ["TourPanel"]

#: ``text`` with ``&``, ``<`` and ``>`` escaped for a rich-text label.
html_escape = functools.partial(html.escape, quote=False)


class TourPanel(Retranslating, QWidget):
    """The guided-tour panel: step counter, title, what to look at, text, engine numbers.

    A step that fills the Train tab keeps the user's settings there and puts them back when the
    tour moves to a step that does not set them, or ends (:meth:`end_tour`).

    Parameters
    ----------
    window
        The window the steps steer (:class:`~gui.tour.host.TourHost`); ``None``: texts only.
    data
        The tour content (default: :func:`load_tour`).

    Signals
    -------
    stepChanged(int)
        The index of the step shown, after its settings were applied.
    claimsEvaluated(int)
        The engine numbers of step ``index`` are shown.
    finished()
        *Finish* on the last step was pressed (the dock closes; the next start is step 1).
    """

    stepChanged = Signal(int)
    claimsEvaluated = Signal(int)
    finished = Signal()

    def __init__(self, window: TourHost | None = None, data: TourData | None = None,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("tourPanel")
        self._window = window
        self._data = data or load_tour()
        self._index = 0
        self._language_override: str | None = None
        self._claims = ClaimEvaluations(self)
        self._claims.finished.connect(self._on_claims_finished)
        self._closed = False
        self._highlight = Highlight()
        # The Train tab's (config, lr sweep) before a step replaced them; None: nothing to undo.
        self._saved_train: tuple[Any, Any] | None = None
        self._own_run = False  # the Train tab's run was started by the current step
        self._model_note = ""  # why the step's sample model did not run (how to install it)

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
        self.next_button.clicked.connect(self._on_next_clicked)

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
    def finish(self) -> None:
        """End the tour from its last step: put the user's settings back, start over next time,
        and emit :attr:`finished` (the dock closes)."""
        self.end_tour()
        self._index = 0
        self.finished.emit()

    def end_tour(self) -> None:
        """Put back what the steps changed outside the explorer (the Train tab's settings);
        idempotent. Called when the tour is closed or finished."""
        self._highlight.stop()
        self._stop_own_run()
        self._restore_train_settings()

    @Slot()
    def _on_next_clicked(self) -> None:
        if self._index + 1 < self.step_count():
            self.next_step()
        else:
            self.finish()

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
        return self._claims.results(self._index if index is None else index)

    def is_evaluating(self) -> bool:
        """True while the claim thread is alive (it starts with the first evaluation)."""
        return self._claims.is_running()

    def shutdown(self, timeout_s: float = 1.0) -> None:
        """Cancel a running claim evaluation and wait for its thread (bounded, then unbounded).

        A later step starts a new thread.
        """
        self._highlight.stop()
        self._claims.shutdown(round(1000 * timeout_s))

    def begin_shutdown(self) -> None:
        """Cancel the evaluation and let the thread end without waiting; evaluate no more.

        Called when the window closes: the window stays responsive meanwhile.
        """
        self._closed = True
        self._highlight.stop()
        self._claims.begin_shutdown()

    def event(self, event: QEvent) -> bool:  # Qt override
        """Stop the claim thread before a ``deleteLater`` destroys it with the panel."""
        if event.type() == QEvent.Type.DeferredDelete:
            self.shutdown()
        return super().event(event)

    # ----------------------------------------------------------------------------- translation
    def retranslate_ui(self) -> None:
        """Set the chrome texts in the current language and re-render the step."""
        self.back_button.setText(translate("TourPanel", "◀ Back"))
        self.back_button.setToolTip(translate("TourPanel", "Previous step (Alt+Left)"))
        self.back_button.setShortcut(QKeySequence("Alt+Left"))
        self.next_button.setShortcut(QKeySequence("Alt+Right"))
        self._render()

    # ---------------------------------------------------------------------------------- steps
    def _apply_step(self) -> None:
        window = self._window
        if window is None:
            return
        self._stop_own_run()  # a step's training belongs to it, as its claims' do
        step = self.step()
        temperature = step.get("view_temperature")
        window.apply_explorer_config(
            self.step_config(), None if temperature is None else float(temperature))
        train = None
        if "train_settings" in step:
            from engine.config.train import TrainConfig

            train = TrainConfig.from_dict(dict(step["train_settings"]))
        sweep = step.get("lr_sweep")
        lr_sweep = (tuple(float(x) for x in sweep["lrs"]), int(sweep["seeds"])) if sweep else None
        if train is not None or lr_sweep is not None:
            if self._saved_train is None:  # the user's own, not a previous step's
                self._saved_train = window.train_settings()
            window.apply_train_settings(train, lr_sweep)
            if step.get("run_training"):
                # The side-by-side run the text talks about, as the Start button runs it: off
                # the GUI thread, the Train tab's progress bar and Stop button with it.
                self._own_run = window.start_training()
        else:
            self._restore_train_settings()
        # A step on a real model runs the sample the text talks about (or names its install).
        self._model_note = window.run_sample_model() if step.get("run_model") else ""
        shown = window.show_view(str(step["view"]))
        if not shown and "fallback_view" in step:
            shown = window.show_view(str(step["fallback_view"]))
        if shown:
            target = window.current_view()
            if isinstance(target, QWidget):
                self._highlight.flash(target)

    def _stop_own_run(self) -> None:
        if self._own_run and self._window is not None and not self._closed:
            self._window.stop_training()
        self._own_run = False

    def _restore_train_settings(self) -> None:
        saved, self._saved_train = self._saved_train, None
        if saved is not None and self._window is not None and not self._closed:
            self._window.apply_train_settings(*saved)

    def _evaluate(self) -> None:
        index = self._index
        if self._claims.results(index) is not None:
            self.claimsEvaluated.emit(index)
        else:  # a newer step wins: the running evaluation is cancelled, this one runs next
            self._claims.request(index, tuple(self.step()["claims"]), self.step_config())

    @Slot(int)
    def _on_claims_finished(self, index: int) -> None:
        if index == self._index:
            self._render()
            self.claimsEvaluated.emit(index)

    # -------------------------------------------------------------------------------- render
    def _render(self) -> None:
        if not self._data.steps:
            return
        lang = self.language()
        step = self.step()
        text = self._data.step_text(lang, str(step["id"]))

        def ui(value: Any) -> str:
            return html_escape(expand_ui_refs(str(value), translate))

        self.counter_label.setText(
            translate("TourPanel", "Step {0} / {1}").format(self._index + 1, self.step_count()))
        self.back_button.setEnabled(self._index > 0)
        last = self._index + 1 >= self.step_count()
        # The last step's button ends the tour (and puts back the settings steps changed).
        self.next_button.setText(translate("TourPanel", "Finish") if last
                                 else translate("TourPanel", "Next ▶"))
        self.next_button.setToolTip(
            translate("TourPanel", "End the tour (Alt+Right)") if last
            else translate("TourPanel", "Next step (Alt+Right)"))
        self.title_label.setText(expand_ui_refs(str(text.get("title", "")), translate))
        # translate() calls stay outside f-strings so that pyside6-lupdate extracts them.
        look_head = html_escape(translate("TourPanel", "Look at:"))
        try_head = html_escape(translate("TourPanel", "Try it yourself:"))
        self.look_label.setText(f"{look_head} <b>{ui(text.get('look', ''))}</b>")
        self.body_label.setText("".join(f"<p>{ui(p)}</p>" for p in text.get("body", [])))
        self.try_label.setText(f"<i>{try_head}</i> {ui(text.get('try', ''))}")
        self.engine_label.setText(self._engine_html(lang))

    def engine_text(self) -> str:
        """The engine-numbers box as plain text (what the user reads)."""
        doc = QTextDocument()
        doc.setHtml(self.engine_label.text())
        return doc.toPlainText()

    def _engine_html(self, lang: str) -> str:
        head = "<b>" + html_escape(translate("TourPanel", "Engine says:")) + "</b>"
        error = self._claims.error(self._index)
        if error is not None:
            message = translate("TourPanel", "could not compute: {0}").format(error)
            return f"{head} {html_escape(message)}"
        results = self._claims.results(self._index)
        if results is None:
            waiting = translate("TourPanel", "computing…")
            return f"{head} {html_escape(waiting)}"
        lines = []
        for result in results:
            claim = result.claim
            mark = ("<span style='color:#1b7f3b'>✓</span>" if result.passed
                    else "<span style='color:#c0392b'>✗</span>")
            target = translate("TourPanel", "claim {0}").format(describe_target(claim))
            lines.append(
                f"{html_escape(self._data.label(lang, str(claim['quantity'])))} "
                f"[{html_escape(claim_context(claim, self.step_config()))}]: "
                f"<b>{html_escape(format_claim_value(claim, result.value))}</b> {mark} "
                f"<span style='color:#555555'>({html_escape(target)})</span>"
            )
        if self._model_note:
            lines.append(f"<i>{html_escape(self._model_note)}</i>")
        return head + "<br>" + "<br>".join(lines)
