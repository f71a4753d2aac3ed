"""The guest scripts: templates in ci/guest/scripts/, filled in here and
handed to the guest (the guest tests of guesttests.py, frag, bench).

A template is the shell text the guest runs, with two forms replaced
(ci/guest/scripts/README.md):

* ``@NAME@`` (NAME: capital letters, digits and ``_``, starting with a
  letter): the value of the parameter NAME.  A text (or a number) stands
  where the placeholder stands; a list of lines is allowed only for a
  placeholder alone on its line, which becomes those lines (none for an
  empty list).
* a line ``@include FILE@``: the template FILE of the same directory,
  filled in with the same parameters, in place of that line.

Nothing else: no expression is evaluated.  A placeholder without a
parameter, a parameter that no placeholder uses, a missing template and
an include of itself are errors."""

import os
import re

from ..core.errors import ForkError
from ..core.paths import repo_root

PLACEHOLDER = re.compile(r"@([A-Z][A-Z0-9_]*)@")
INCLUDE = re.compile(r"@include ([A-Za-z0-9][A-Za-z0-9._-]*)@\n?")
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*\.sh")


def scripts_dir():
    """ci/guest/scripts of the project repository."""
    return os.path.join(repo_root(), "ci", "guest", "scripts")


def read(name):
    """The bytes of template `name` (a file name in ci/guest/scripts/)."""
    if not NAME.fullmatch(name):
        raise ForkError("guest script %r: name a file of ci/guest/scripts/ (NAME.sh)" % (name,))
    path = os.path.join(scripts_dir(), name)
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except FileNotFoundError:
        raise ForkError("ci/guest/scripts/%s is missing in %s: restore it from git "
                        "(git checkout -- ci/guest/scripts/%s)" % (name, repo_root(), name))


def render(name, params=None):
    """(the text of template `name` filled in with `params`, [the templates
    it was made of: `name` and what it includes, each once, in order])."""
    params = dict(params or {})
    for key, value in params.items():
        if not PLACEHOLDER.fullmatch("@%s@" % key):
            raise ForkError("guest script %s: parameter %r is not a NAME of capitals, digits "
                            "and _" % (name, key))
        if not isinstance(value, (str, int, list, tuple)) or isinstance(value, bool):
            raise ForkError("guest script %s: parameter %s is %r: give a text, a number or "
                            "a list of lines" % (name, key, value))
    used, files = set(), []
    text = _fill(name, params, used, files, ())
    unused = sorted(set(params) - used)
    if unused:
        raise ForkError("guest script %s: no @%s@ in %s: drop the parameter or use it"
                        % (name, "@, @".join(unused), " + ".join(files)))
    return text, files


def _fill(name, params, used, files, within):
    if name in within:
        raise ForkError("guest script %s includes itself (%s)"
                        % (name, " -> ".join(within + (name,))))
    if name not in files:
        files.append(name)
    try:
        text = read(name).decode()
    except UnicodeDecodeError as exc:
        raise ForkError("ci/guest/scripts/%s is not UTF-8 text (%s)" % (name, exc))
    out = []
    for line in text.splitlines(keepends=True):
        inc = INCLUDE.fullmatch(line)
        if inc:
            out.append(_fill(inc.group(1), params, used, files, within + (name,)))
            continue
        whole = PLACEHOLDER.fullmatch(line.rstrip("\n"))
        if whole and isinstance(params.get(whole.group(1)), (list, tuple)):
            used.add(whole.group(1))
            out.extend(str(l) + "\n" for l in params[whole.group(1)])
            continue
        out.append(PLACEHOLDER.sub(lambda m: _value(name, params, used, m.group(1)), line))
    return "".join(out)


def _value(name, params, used, key):
    if key not in params:
        raise ForkError("guest script %s: @%s@ has no value: give the parameter %s"
                        % (name, key, key))
    value = params[key]
    if isinstance(value, (list, tuple)):
        raise ForkError("guest script %s: @%s@ is a list of lines: put it alone on its line"
                        % (name, key))
    used.add(key)
    return str(value)
