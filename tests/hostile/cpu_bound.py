"""``within_cpu(seconds)``: a block that must end within this many CPU seconds of this process.
Past them, SIGPROF stops it with an AssertionError naming the bound, so work that would run for
ever (a quadratic parse, an alias bomb) fails the test instead of hanging it."""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Iterator


@contextlib.contextmanager
def within_cpu(seconds: float, what: str = "the block") -> Iterator[None]:
    def stop(signum, frame):
        raise AssertionError(f"{what} ran past {seconds:g} s of CPU")

    old = signal.signal(signal.SIGPROF, stop)
    signal.setitimer(signal.ITIMER_PROF, seconds)
    start = time.process_time()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.signal(signal.SIGPROF, old)
    assert time.process_time() - start < seconds
