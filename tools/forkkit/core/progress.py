"""Progress lines on stderr."""

import errno
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
        """Print a line; a stream that is gone (`| tee` ended by the same
        Ctrl-C, an ssh connection hung up: EPIPE, EIO) loses it, never stops
        what the kit does next (ending its guests)."""
        try:
            print("[%7.1fs] %s: %s" % (self.elapsed(), self.verb, msg), file=self.stream,
                  flush=True)
        except OSError as exc:
            if exc.errno not in (errno.EPIPE, errno.EIO):
                raise
