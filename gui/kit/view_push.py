"""Pacing for the views: an input throttle and a view pusher.

:class:`Throttle` coalesces input (the first call at once, later ones into one at the
interval's end); :class:`ViewPusher` pushes the latest results to the visible views at most
once per interval, and hidden views catch up when shown. The worker threads whose results
they pace are in :mod:`gui.kit.jobs`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from PySide6.QtCore import QObject, QTimer, Slot

from gui.kit.plot_view import PlotView

__all__ = ["Throttle", "ViewPusher"]


class Throttle(QObject):
    """Leading- and trailing-edge throttle: coalesces bursts of calls into few callbacks.

    The first :meth:`trigger` after a quiet period calls ``callback`` at once (low latency);
    later triggers within ``interval_ms`` collapse into one call at the end of the interval,
    so the last state always gets through.
    """

    def __init__(self, interval_ms: int, callback: Callable[[], None],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._callback = callback
        self._pending = False
        self._calling = False
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(int(interval_ms))
        self._timer.timeout.connect(self._on_timeout)

    def trigger(self) -> None:
        """Call back now, or at the end of the current interval."""
        if self._timer.isActive() or self._calling:
            self._pending = True
            return
        self._call()

    def is_pending(self) -> bool:
        """True while a call waits for the end of the interval."""
        return self._pending

    def discard(self) -> None:
        """Forget a waiting call (the interval keeps running)."""
        self._pending = False

    def stop(self) -> None:
        """Stop the timer and forget a waiting call."""
        self._timer.stop()
        self._pending = False

    def _call(self) -> None:
        # The interval starts when the callback returns (a slow push must not shorten the
        # pause after it); a trigger from inside the callback waits for that interval.
        self._calling = True
        try:
            self._callback()
        finally:
            self._calling = False
        self._timer.start()

    @Slot()
    def _on_timeout(self) -> None:
        if self._pending:
            self._pending = False
            self._call()


class ViewPusher(QObject):
    """Pushes the latest results to the visible views, at most once per ``interval_ms``.

    Parameters
    ----------
    views
        Objects with ``show_results(results)``; a hidden one is skipped and marked stale
        (:meth:`refresh_view` catches it up).
    latest
        Returns the results to push (``None``: nothing yet).
    interval_ms
        Minimum interval between two pushes.
    pushed, after_push
        Called after every push, inside ``guard`` with the results and the views whose content
        it changed (:meth:`PlotView.take_change`), and outside it with those views.
    guard
        Context manager factory wrapped around every batch of view updates.
    """

    def __init__(
        self,
        views: Iterable[Any],
        latest: Callable[[], object | None],
        interval_ms: int,
        *,
        pushed: Callable[[object, Sequence[object]], None] | None = None,
        after_push: Callable[[Sequence[object]], None] | None = None,
        guard: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext,
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._views: list[Any] = list(views)
        self._latest = latest
        self._pushed = pushed
        self._after_push = after_push
        self._guard = guard
        self._stale: set[object] = set()
        self._closed = False
        self._throttle = Throttle(interval_ms, self._push, self)

    def schedule(self) -> None:
        """New results: push now if the last push is an interval ago, else at its end."""
        if not self._closed:
            self._throttle.trigger()

    def is_pending(self) -> bool:
        """True while newer results wait for the next push."""
        return self._throttle.is_pending()

    def flush(self) -> None:
        """Push a waiting update now to every visible view, due or not."""
        if self._throttle.is_pending() and not self._closed:
            self._throttle.discard()
            self._push()

    def discard(self) -> None:
        """Forget a waiting update and every stale mark (e.g. the views were cleared)."""
        self._throttle.discard()
        self._stale.clear()

    def close(self) -> None:
        """Push nothing any more (shutdown)."""
        self._closed = True
        self._throttle.stop()

    def is_stale(self, view: object) -> bool:
        """True if ``view`` missed a push while hidden."""
        return view in self._stale

    def refresh_views(self) -> None:
        """Push the latest results to every view now, hidden ones too (e.g. before export)."""
        results = self._latest()
        if results is None:
            return
        with self._guard():
            for view in self._views:
                view.show_results(results)
        self._stale.clear()

    def refresh_view(self, view: Any) -> None:
        """Bring ``view`` up to date if it missed pushes while hidden."""
        results = self._latest()
        if results is not None and view in self._stale:
            self._stale.discard(view)
            with self._guard():
                view.show_results(results)

    def _show_changes(self, view: Any, results: object) -> bool:
        """Show ``results`` in ``view``; whether that changed what it shows (if not, the
        view needs no paint)."""
        if not isinstance(view, PlotView):
            view.show_results(results)
            return True
        view.take_change()  # what a catch-up while hidden changed was painted as it came up
        view.show_results(results)
        return view.take_change()

    def _push(self) -> None:
        results = self._latest()
        if results is None or self._closed:
            return
        shown: list[object] = []
        with self._guard():
            for view in self._views:
                visible = getattr(view, "isVisible", None)
                if visible is not None and not visible():
                    self._stale.add(view)
                    continue
                if self._show_changes(view, results):
                    shown.append(view)
                self._stale.discard(view)
            if self._pushed is not None:
                self._pushed(results, shown)
        if self._after_push is not None:
            self._after_push(shown)
