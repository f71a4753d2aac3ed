"""The documents and `tools/fork VERB --help` against the argparse definitions.

The parsers of tools/forkkit/verbs/*.py are the one source of truth for the
verbs' options: each option's help says what it does and its default
(argparse's %(default)s, never a copy of the value), and a list of choices
in a help text is the parser's own.  The documents (README.md,
BENCHMARKS.md, FSTESTS.md, CHECKS.md, fixes/README.md) may name commands and
options, but each one they name must be valid for that verb's parser:

* every `tools/fork VERB ...` in a code span or code block and every verb
  synopsis of README's verb list names options of that verb, and an
  `--option` code span is an option of a verb its paragraph names before
  it or of the verb its document is about (BENCHMARKS.md: bench,
  FSTESTS.md: fstests);
* a value given to an option with choices (--config: kconfig.FLAVOURS,
  --test: guesttests.TESTS, or the parser's own choices) is one of them,
  and a list of alternatives (`--mode wall|icount`) is all of them;
* a default the text states (`--mode wall` (default)) is the parser's.
"""

import argparse
import re

import pytest

from conftest import ROOT
from forkkit import cli
from forkkit.build import kbuild, kconfig
from forkkit.core.errors import ForkError
from forkkit.guest import guesttests
from forkkit.verbs import frag as cmd_frag

DOCS = ["README.md", "BENCHMARKS.md", "FSTESTS.md", "CHECKS.md", "fixes/README.md"]
# a document about one verb: its bare `--option` spans may be that verb's
DOC_VERB = {"BENCHMARKS.md": "bench", "FSTESTS.md": "fstests"}
STOP = {";", "&&", "||", "|", ">", ">>", "2>&1", "--"}
PLACEHOLDER = re.compile(r"^([A-Z][A-Z0-9_]*|\.\.\.|…|<.*>)$")


def subparsers():
    for action in cli.parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    raise AssertionError("tools/fork has no verbs")


PARSERS = subparsers()


def option_map(verb):
    return {opt: a for a in PARSERS[verb]._actions for opt in a.option_strings}


def choice_set(action):
    """The values an option takes, from the kit's own tables."""
    if action.choices:
        return {str(c) for c in action.choices}
    if action.dest == "test":
        return set(guesttests.TESTS)
    if action.dest == "config":
        return set(kconfig.FLAVOURS)
    return None


def takes_value(action):
    return action.nargs != 0


# -- reading the documents ----------------------------------------------------

def blocks(text):
    """(kind, text) of a document: "code" for each line of an indented
    block, "table" for each table row, "para" for a paragraph or list item
    with its lines joined."""
    out, para = [], []

    def flush():
        if para:
            out.append(("para", " ".join(para)))
            para.clear()

    for line in text.splitlines():
        if line.startswith("    ") and not para:
            out.append(("code", line.split(" #", 1)[0].strip()))
        elif line.lstrip().startswith("|"):
            flush()
            out.append(("table", line))
        elif not line.strip():
            flush()
        else:
            if re.match(r"\s*([*-]|\d+\.)\s", line):
                flush()
            para.append(line.strip())
    flush()
    return out


def spans(text):
    return re.findall(r"`+([^`]+)`+", text)


def commands(words):
    """(verb, args) of each `tools/fork VERB ...` in a list of words."""
    out = []
    for i, w in enumerate(words):
        if w.endswith("tools/fork") and i + 1 < len(words):
            args = []
            for a in words[i + 2:]:
                if a in STOP or a.endswith("tools/fork"):
                    break
                args.append(a)
            out.append((words[i + 1], args))
    return out


def doc_items(name):
    """(where, verbs, args) of every command and every bare option span of
    a document.  A command has one verb; a bare span may be an option of
    any verb its paragraph names before it, or of the verb the document is
    about; elsewhere it is left alone (it may be another program's:
    checkpatch's `--strict`)."""
    text = (ROOT / name).read_text()
    in_verbs = False
    items = []
    for kind, body in blocks(text):
        if kind == "para" and body.startswith("#"):
            in_verbs = name == "README.md" and body.strip("# ").lower() == "verbs"
            continue
        where = "%s: %s" % (name, body[:70])
        named = []
        parts = [body] if kind == "code" else spans(body)
        for i, part in enumerate(parts):
            words = part.split()
            if not words:
                continue
            if in_verbs and kind == "para" and i == 0 and body.startswith(("* `", "- `")) \
                    and words[0] in PARSERS:
                words = ["tools/fork"] + words
            found = commands(words)
            for v, args in found:
                items.append((where, [v], args))
                named.append(v)
            verbs = named + [DOC_VERB[name]] if name in DOC_VERB else named
            if not found and words[0].startswith("--") and verbs:
                items.append((where, verbs, words))
    return items


def check_item(where, verbs, args):
    """A bare option span: checked against the first verb that has it."""
    known = [v for v in verbs if v in PARSERS] if args else []
    for verb in known:
        if args[0].split("=")[0] in option_map(verb):
            return check_args(where, verb, args)
    return check_args(where, verbs[0], args)


def check_args(where, verb, args):
    """What is wrong with `tools/fork VERB ARGS` (a list of messages)."""
    if verb not in PARSERS:
        return [] if PLACEHOLDER.match(verb) else ["%s: no verb %r" % (where, verb)]
    opts = option_map(verb)
    errors = []
    i = 0
    while i < len(args):
        word = args[i].strip("[](),.:;")
        i += 1
        if not re.match(r"^--?[a-zA-Z]", word):
            continue
        opt, _, value = word.partition("=")
        action = opts.get(opt)
        if action is None:
            errors.append("%s: `%s` is not an option of `tools/fork %s`" % (where, opt, verb))
            continue
        if not takes_value(action) or (not value and i >= len(args)):
            continue
        if not value:
            value = args[i].strip("[](),.:;")
            i += 1
        errors += check_value(where, verb, opt, action, value)
    return errors


def check_value(where, verb, opt, action, value):
    allowed = choice_set(action)
    if allowed is None or PLACEHOLDER.match(value):
        return []
    given = value.split("|")
    bad = [v for v in given if v not in allowed]
    if bad:
        return ["%s: `%s %s`: %s is not one of %s (the parser's choices)"
                % (where, opt, value, ", ".join(bad), ", ".join(sorted(allowed)))]
    if len(given) > 1 and set(given) != allowed:
        return ["%s: `%s %s` lists %d of the %d choices of `tools/fork %s %s`: %s"
                % (where, opt, value, len(given), len(allowed), verb, opt,
                   ", ".join(sorted(allowed)))]
    return []


@pytest.mark.parametrize("name", DOCS)
def test_documented_options_exist(name):
    items = doc_items(name)
    assert items or name == "fixes/README.md", "no command found in %s" % name
    errors = []
    for where, verbs, args in items:
        errors += check_item(where, verbs, args)
    assert not errors, "\n".join(errors)


def default_errors(name, text):
    """`--opt VALUE` (default) in a document: VALUE must be the parser's
    default of that option of the verb last named (or the document's)."""
    errors = []
    verb = DOC_VERB.get(name)
    for m in re.finditer(r"tools/fork (\w+)|`(--[\w-]+) ([^`\s]+)` \(default\b",
                         " ".join(text.split())):
        if m.group(1):
            verb = m.group(1) if m.group(1) in PARSERS else verb
            continue
        action = option_map(verb).get(m.group(2)) if verb else None
        if action is not None and str(action.default) != m.group(3):
            errors.append("%s: `%s %s` is called the default of `tools/fork %s`, which is %r"
                          % (name, m.group(2), m.group(3), verb, action.default))
    return errors


@pytest.mark.parametrize("name", DOCS)
def test_documented_defaults_are_the_parsers(name):
    errors = default_errors(name, (ROOT / name).read_text())
    assert not errors, "\n".join(errors)


def test_check_args_finds_errors():
    """The checker itself: a wrong option, a wrong value, a partial list."""
    assert check_args("x", "check", ["--config", "kcsan", "--test", "stress"]) == []
    assert len(check_args("x", "check", ["--no-such"])) == 1
    assert len(check_args("x", "check", ["--config", "nope"])) == 1
    assert len(check_args("x", "bisect", ["--test", "smoke|stress"])) == 1
    assert check_args("x", "bench", ["--mode", "wall|icount"]) == []
    assert default_errors("BENCHMARKS.md", "`--mode wall` (default): ...") == []
    assert len(default_errors("BENCHMARKS.md", "`--mode icount` (default): ...")) == 1
    assert len(default_errors("x", "`tools/fork check`; `--timeout 60` (default)")) == 1


# -- the help texts -----------------------------------------------------------

def actions():
    for verb, p in PARSERS.items():
        for a in p._actions:
            if not isinstance(a, argparse._HelpAction):
                yield verb, a


def name_of(action):
    return "/".join(action.option_strings) or action.dest


def real_default(action):
    d = action.default
    return not (d is None or d is False or d is argparse.SUPPRESS or d == [] or d == "")


@pytest.mark.parametrize("verb", sorted(PARSERS))
def test_every_option_has_help(verb):
    empty = [name_of(a) for v, a in actions() if v == verb
             if not (a.help or "").strip() or a.help is argparse.SUPPRESS]
    assert not empty, "tools/fork %s: options without help: %s" % (verb, ", ".join(empty))


@pytest.mark.parametrize("verb", sorted(PARSERS))
def test_every_default_is_in_the_help(verb):
    """A default is shown from the parser (%(default)s), never typed in."""
    missing = []
    for v, a in actions():
        if v != verb or not real_default(a) or isinstance(a, argparse._StoreFalseAction):
            continue
        if a.default is True:
            ok = "default" in a.help
        else:
            ok = "%(default)s" in a.help
        if not ok:
            missing.append("%s (default %r)" % (name_of(a), a.default))
    assert not missing, ("tools/fork %s --help: defaults not shown by %%(default)s: %s"
                         % (verb, ", ".join(missing)))


def expanded_help(parser, action):
    return parser._get_formatter()._expand_help(action)


@pytest.mark.parametrize("verb", sorted(PARSERS))
def test_listed_choices_are_the_parsers(verb):
    """A help text that names two or more of an option's choices names all
    of them; a `--opt a|b` or `--opt {a,b}` in the verb's description too."""
    p = PARSERS[verb]
    errors = []
    for v, a in actions():
        allowed = choice_set(a) if v == verb else None
        if not allowed:
            continue
        text = expanded_help(p, a)
        named = {c for c in allowed if re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(c), text)}
        if len(named) > 1 and named != allowed:
            errors.append("%s lists %s of %s" % (name_of(a), ", ".join(sorted(named)),
                                                 ", ".join(sorted(allowed))))
    for m in re.finditer(r"(--[\w-]+)[ =]\{?([\w-]+(?:[|,][\w-]+)+)\}?", p.description or ""):
        action = option_map(verb).get(m.group(1))
        if action is not None:
            errors += check_value("description", verb, m.group(1), action,
                                  m.group(2).replace(",", "|"))
    assert not errors, "tools/fork %s --help:\n%s" % (verb, "\n".join(errors))


# -- facts the documents state -------------------------------------------------

def test_kernel_store_path(tmp_path, monkeypatch):
    """Where README and BENCHMARKS.md say built kernels are kept is where
    the build keeps them."""
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path))
    store = "work/%s/" % kbuild.kernels_dir()[len(str(tmp_path)) + 1:]
    errors = []
    for name in ("README.md", "BENCHMARKS.md"):
        for path in re.findall(r"`(work/(?:[^`/]+/)*kernels/)", (ROOT / name).read_text()):
            if path != store:
                errors.append("%s names %s: the kit keeps kernels in %s" % (name, path, store))
    assert not errors, "\n".join(errors)


def test_readme_states_no_test_count():
    """How many tests pass, and in how long, goes stale with every test."""
    text = " ".join((ROOT / "README.md").read_text().split())
    stale = re.findall(r"\d[\d,]* (?:passed|tests pass)[^.]*", text)
    assert not stale, "README.md states a test count: %s" % stale


def test_frag_defaults_to_the_primary_series(kit, monkeypatch):
    """Without revisions, frag compares the primary series' distro and
    series branches, as bench and fstests do (not a fixed 6.12)."""
    built = []

    def build(rev, **_):
        built.append(rev)
        raise ForkError("stop after the first build")

    monkeypatch.setattr(cmd_frag, "build", build)
    assert cli.main(["frag"]) == 1
    assert built == ["distro/9.9"]
    assert PARSERS["frag"].parse_args([]).revs == []
