"""The one exception the kit raises for the user."""


class ForkError(Exception):
    """An error the user can act on: the message says what to do."""


class RunnerError(ForkError):
    """What boots a guest failed before the kernel ran, or on its own
    account (LAVA's dispatcher or server: no QEMU, no kernel output, a job
    canceled, a server that does not answer): the run says nothing of the
    kernel.  A check records it as an error of the runner, never as a pass
    or as the kernel's failure."""
