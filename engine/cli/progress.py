"""Progress of the headless commands on stderr (no Qt).

On a terminal the line is redrawn in place (``\\r``), at most every 0.2 s. Anywhere else (a
log file, a pipe, a CI job) a redrawn line would pile up into one giant line, so a new line is
written each time the work passes another tenth (10 %, 20 %, … 100 %): about ten lines
whatever the length of the run.

The percentage is the share of the work done, rounded down, and reads 100 % only once the
command has finished everything (a bar whose work is done but whose last results are still
being written shows 99 %), so it never runs ahead of the count printed beside it.
"""

from __future__ import annotations

import math
import time
from typing import IO

__all__ = ["Progress"]

#: Shortest time between two redraws on a terminal (s).
REDRAW_INTERVAL_S = 0.2


class Progress:
    """A progress line on ``stream`` (stderr); nothing at all when ``quiet``. ``tty`` says
    whether ``stream`` is a terminal (default: ``stream.isatty()``)."""

    def __init__(self, stream: IO[str], quiet: bool = False, *, tty: bool | None = None) -> None:
        self.stream = stream
        self.quiet = quiet
        self.tty = bool(stream.isatty()) if tty is None and hasattr(stream, "isatty") else bool(
            tty)
        self._last_draw = -math.inf
        self._tenth = 0  # the last tenth written as a line (not on a terminal)
        self._open_line = False  # a terminal line is drawn and not yet ended

    @staticmethod
    def percent(fraction: float, done: bool = False) -> int:
        """The percentage shown for ``fraction`` of the work: rounded down, 100 only ``done``."""
        if done:
            return 100
        if not math.isfinite(fraction):
            return 0
        return min(99, max(0, math.floor(100 * fraction)))

    def update(self, fraction: float, text: str, *, done: bool = False) -> None:
        """Show ``"<percent> %  <text>"`` for ``fraction`` (0..1) of the work.

        ``done`` marks the last update: always shown, at 100 %.
        """
        if self.quiet:
            return
        percent = self.percent(fraction, done)
        line = f"{percent:3d} %  {text}"
        if self.tty:
            now = time.perf_counter()
            if not done and now - self._last_draw < REDRAW_INTERVAL_S:
                return
            self._last_draw = now
            self.stream.write("\r\x1b[K" + line)
            self._open_line = True
        else:
            tenth = percent // 10
            if not done and tenth <= self._tenth:
                return
            self._tenth = tenth
            self.stream.write(line + "\n")
        self.stream.flush()

    def end(self) -> None:
        """End the terminal line (call once the work has stopped, finished or not)."""
        if not self.quiet and self.tty and self._open_line:
            self.stream.write("\n")
            self.stream.flush()
            self._open_line = False
