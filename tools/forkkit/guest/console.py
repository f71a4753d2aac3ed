"""Following a guest's console log while the guest runs (qemu.run_guest's
`follow`): bench snapshots the host's load at each point, fstests prints
a line per finished test."""

import threading


class Follower(threading.Thread):
    """Reads what the guest added to its console log every `interval`
    seconds and hands the complete new lines (without their line ends) to
    lines(); stop() hands over the rest."""

    def __init__(self, log, interval):
        super().__init__(daemon=True)
        self.log = log
        self.interval = interval
        self.stop_evt = threading.Event()
        self.pos = 0
        self.buf = ""

    def lines(self, new):
        """Called with every batch of new console lines."""

    def poll(self):
        try:
            with open(self.log, "rb") as fh:
                fh.seek(self.pos)
                data = fh.read()
        except OSError:
            return
        self.pos += len(data)
        new = (self.buf + data.decode(errors="replace")).split("\n")
        self.buf = new.pop()
        if new:
            self.lines([line.rstrip("\r") for line in new])

    def run(self):
        while not self.stop_evt.wait(self.interval):
            self.poll()

    def stop(self):
        """Stop following (once the guest has exited) and read the rest."""
        self.stop_evt.set()
        if self.is_alive():
            self.join()
        self.poll()
        if self.buf:
            line, self.buf = self.buf, ""
            self.lines([line.rstrip("\r")])
