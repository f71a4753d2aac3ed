"""tools/fork front end: help for every verb, argument plumbing."""

import subprocess

import pytest

from conftest import FORK, PYTHON
from forkkit import cli
from forkkit.verbs import boot as cmd_boot


def verbs():
    return [verb for verb, module in cli.VERBS if cli.load(module) is not None]


def fork(*args):
    return subprocess.run([PYTHON, str(FORK)] + list(args), capture_output=True, text=True,
                          timeout=60)


def test_help():
    proc = fork("--help")
    assert proc.returncode == 0, proc.stderr
    for verb in verbs():
        assert verb in proc.stdout


def test_core_verbs_present():
    assert {"import", "branches", "save", "build", "boot", "check"} <= set(verbs())


@pytest.mark.parametrize("verb", verbs())
def test_verb_help(verb):
    proc = fork(verb, "--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: fork %s" % verb)


def test_no_verb_and_bad_arguments():
    proc = fork()
    assert proc.returncode == 2
    assert "usage: fork" in proc.stdout
    proc = fork("build", "--no-such-option")
    assert proc.returncode == 2
    assert "unrecognized arguments: --no-such-option" in proc.stderr


@pytest.fixture
def boot_args(monkeypatch):
    seen = []
    monkeypatch.setattr(cmd_boot, "main", lambda args: seen.append(args) or 0)
    return seen


@pytest.mark.parametrize("argv,rev,rest", [
    (["boot", "--kernel", "bz", "--", "echo", "hi"], None, ["echo", "hi"]),
    (["boot", "--", "ls", "-l"], None, ["ls", "-l"]),
    (["boot", "HEAD", "--", "echo", "hi"], "HEAD", ["echo", "hi"]),
    (["boot", "HEAD", "--timeout", "5", "--", "ls", "-l", "--", "x"], "HEAD",
     ["ls", "-l", "--", "x"]),
    (["boot", "--kernel", "bz", "--", "--help"], None, ["--help"]),
    (["boot", "HEAD"], "HEAD", []),
])
def test_boot_command_after_double_dash(boot_args, argv, rev, rest):
    assert cli.main(argv) == 0
    args = boot_args[0]
    assert args.rev == rev
    assert args.rest == rest


def test_errors_are_one_line_and_exit_1(kit):
    res = kit.fork("build", "nope", subprocess_=True)
    assert res.rc == 1
    assert res.err.startswith("fork build: error: ")
    assert "Traceback" not in res.err


@pytest.mark.parametrize("verb", ["build", "boot", "check"])
def test_unknown_config_flavour(verb):
    proc = fork(verb, "--config", "nope")
    assert proc.returncode == 2
    assert "invalid choice: 'nope'" in proc.stderr
