"""What the fuzz tests of hostile files share: one random mutation of a file's bytes, and a
run bounded in time (a hang fails the test instead of stalling the suite)."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable


def mutate(data: bytes, rnd: random.Random, region: int | None = None) -> bytes:
    """``data`` with bytes flipped, cut short, an extreme 32-bit field (sizes, offsets,
    lengths) or bytes inserted; all but the cut within the first ``region`` bytes (the header)
    if given."""
    out = bytearray(data)
    within = len(out) if region is None else region
    kind = rnd.random()
    if kind < 0.5:  # flipped bytes
        for _ in range(rnd.randint(1, 8)):
            out[rnd.randrange(within)] = rnd.randrange(256)
    elif kind < 0.7:  # cut short
        del out[rnd.randrange(len(out)):]
    elif kind < 0.85:  # an extreme 32-bit field
        at = rnd.randrange(within)
        out[at:at + 4] = rnd.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00",
                                     b"\x7f\xff\xff\xff", b"\x80\x00\x00\x00"])
    else:  # inserted bytes
        at = rnd.randrange(within)
        out[at:at] = rnd.randbytes(rnd.randint(1, 16))
    return bytes(out)


def run_bounded(work: Callable[[], None], seconds: float) -> None:
    """Run ``work`` in a daemon thread; fail if it has not ended after ``seconds``."""
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(timeout=seconds)
    assert not worker.is_alive(), f"the fuzz set hung (still running after {seconds} s)"
