"""Command-line front end: `tools/fork VERB ...`, one module per verb
(tools/forkkit/verbs/)."""

import argparse
import importlib
import os
import signal
import sys

from .core import interrupt
from .core.errors import ForkError

# verb -> module (tools/forkkit/verbs/<module>.py)
VERBS = [
    ("import", "import_"),
    ("branches", "branches"),
    ("save", "save"),
    ("build", "build"),
    ("boot", "boot"),
    ("check", "check"),
    ("bench", "bench"),
    ("export", "export"),
    ("maintainers", "maintainers"),
    ("frag", "frag"),
    ("rebase", "rebase"),
    ("update", "update"),
    ("bisect", "bisect"),
    ("compare", "compare"),
    ("fstests", "fstests"),
    ("report", "report"),
    ("lava", "lava"),
    ("scale", "scale"),
]


def load(module):
    try:
        return importlib.import_module("forkkit.verbs.%s" % module)
    except ModuleNotFoundError as exc:
        if exc.name == "forkkit.verbs.%s" % module:
            return None
        raise


def parser():
    p = argparse.ArgumentParser(
        prog="fork",
        description="Maintain the ext2 scalability series on Debian kernel snapshots: "
                    "import, lay out topic branches, build, boot and check every commit "
                    "in QEMU, benchmark, export for the mailing list, rebase, bisect.")
    sub = p.add_subparsers(dest="verb", metavar="VERB")
    for verb, module in VERBS:
        mod = load(module)
        if mod is None:
            continue
        sp = sub.add_parser(verb, help=mod.HELP, description=mod.__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(sp)
        sp.set_defaults(func=mod.main)
    return p


def main(argv, die_by_signal=False):
    """Run a verb; its exit status.  An interrupt (Ctrl-C, SIGTERM, SIGHUP)
    prints one line and returns 128 + the signal, or with `die_by_signal`
    (tools/fork) ends the process by that signal, as an interrupted
    program should: a shell loop or script that runs the kit then stops
    as well (it sees a status of 130 from a program that exited, not
    killed, as that program's own answer, and goes on)."""
    p = parser()
    after = None
    if "--" in argv:
        idx = argv.index("--")
        argv, after = argv[:idx], argv[idx + 1:]
    args, extra = p.parse_known_args(argv)
    if extra:
        # a verb whose positionals may come after its options
        # (`fstests A B --time-limit 60 generic/001`) takes the rest
        if getattr(args, "intermixed", None) and not any(e.startswith("-") for e in extra):
            getattr(args, args.intermixed).extend(extra)
        else:
            p.error("unrecognized arguments: %s" % " ".join(extra))
    if not getattr(args, "verb", None):
        p.print_help()
        return 2
    if after is not None:
        if not getattr(args, "accepts_rest", False):
            p.error("%s takes no command after --" % args.verb)
        args.rest = after
    try:
        with interrupt.terminate_as_interrupt():
            return args.func(args) or 0
    except ForkError as exc:
        say("fork %s: error: %s" % (args.verb, exc))
        return 1
    except OSError as exc:
        # a file or directory the kit cannot read or write (work/ not
        # writable, disk full, ...): one line, not a traceback
        where = exc.filename or ""
        say("fork %s: error: %s%s: check that the path exists and is writable "
            "(work/ is $FORK_WORKDIR, default <repo>/work)"
            % (args.verb, exc.strerror or exc, " (%s)" % where if where else ""))
        return 1
    except KeyboardInterrupt as exc:
        # Ctrl-C, or SIGTERM/SIGHUP (interrupt.Terminated): 128 + the signal
        signum = getattr(exc, "signum", signal.SIGINT)
        say("fork %s: interrupted%s" % (args.verb, "" if signum == signal.SIGINT else
                                        " (%s)" % signal.Signals(signum).name))
        if die_by_signal:
            die(signum)
        return 128 + signum


def say(line):
    """A line on stderr, which may be gone (`| tee` ended by the same
    Ctrl-C, an ssh connection hung up)."""
    try:
        print(line, file=sys.stderr, flush=True)
    except OSError:
        pass


def die(signum):
    """End this process by `signum`, its default action (the caller has
    cleaned up)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signum])
    os.kill(os.getpid(), signum)
