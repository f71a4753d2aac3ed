"""Progress lines on stderr."""

import sys
import time


class Progress:
    """One line per stage with elapsed time (since the verb started)."""

    def __init__(self, verb, stream=None):
        self.verb = verb
        self.t0 = time.monotonic()
        self.stream = stream or sys.stderr

    def elapsed(self):
        return time.monotonic() - self.t0

    def say(self, msg):
        print("[%7.1fs] %s: %s" % (self.elapsed(), self.verb, msg), file=self.stream, flush=True)
