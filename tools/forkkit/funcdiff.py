"""Which fs/ext2 functions a commit changed relative to the series' base.

The sanitizer rule excuses a report in ext2's code only where that code is
stock: the commit has not changed any ext2 function the report names, and
the base shows the same report (cmd_check, reports.judge).  "Changed" is
decided conservatively:

* a change to any file outside fs/ext2, to a file of fs/ext2 that is not a
  .c file (ext2.h's inline functions, macros and structures reach every
  function), or to a .c file outside its function bodies (a macro, a
  structure, a static variable, a prototype) changes everything: ALL;
* otherwise the functions whose text differs (or that one side lacks),
  and every ext2 function that calls one of them, directly or through
  others: a changed static helper may be inlined into its caller, and then
  no stack names it.

Function bodies are found in kernel style: a definition's "{" and its
closing "}" stand alone at column 0 (Documentation/process/coding-style.rst).
"""

import re

from .common import git

ALL = "all"        # the commit changed ext2 beyond function bodies
EXT2_DIR = "fs/ext2/"

IDENT_RE = re.compile(r"\b[A-Za-z_]\w*\b")
NAME_RE = re.compile(r"([A-Za-z_]\w*)\s*\(")
COMMENT_LINE_RE = re.compile(r"^\s*(/\*|\*|//)")


def split_functions(text):
    """({name: [definition text, ...]}, text outside the definitions) of a
    kernel-style C file.  A definition is its header (the lines since the
    last blank, ";"-ending, "}"-ending or preprocessor line, comments
    included) through the "}" at column 0 that closes the "{" at column 0."""
    funcs, outside, header = {}, [], []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        code = " ".join(l for l in header if not COMMENT_LINE_RE.match(l))
        m = NAME_RE.search(code) if line.rstrip() == "{" else None
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("}"):
                j += 1
            funcs.setdefault(m.group(1), []).append("\n".join(header + lines[i:j + 1]))
            header = []
            i = j + 1
            continue
        header.append(line)
        stripped = line.rstrip()
        if not stripped or stripped.endswith((";", "}")) or stripped.startswith("#"):
            outside += header
            header = []
        i += 1
    outside += header
    return funcs, "\n".join(outside)


def _show(rev, path):
    return git(["show", "%s:%s" % (rev, path)])


def changed_functions(base, commit):
    """The names of the fs/ext2 functions `commit` changed relative to
    `base` (with their callers), or ALL (see the module's text)."""
    names = git(["diff", "--name-only", "--no-renames", base, commit]).split()
    if any(not n.startswith(EXT2_DIR) or not n.endswith(".c") for n in names):
        return ALL
    base_files = set(git(["ls-tree", "--name-only", base, EXT2_DIR]).split())
    new_files = set(git(["ls-tree", "--name-only", commit, EXT2_DIR]).split())
    changed = set()
    for path in names:
        old = split_functions(_show(base, path)) if path in base_files else ({}, "")
        new = split_functions(_show(commit, path)) if path in new_files else ({}, "")
        if old[1] != new[1]:
            return ALL
        changed |= {f for f in set(old[0]) | set(new[0]) if old[0].get(f) != new[0].get(f)}
    if not changed:
        return changed
    # callers, to a fixed point, over every .c file of fs/ext2 at `commit`
    bodies = {}
    for path in sorted(new_files):
        if path.endswith(".c"):
            for name, texts in split_functions(_show(commit, path))[0].items():
                bodies.setdefault(name, set()).update(
                    IDENT_RE.findall("\n".join(texts)))
    grew = True
    while grew:
        grew = False
        for name, idents in bodies.items():
            if name not in changed and (idents - {name}) & changed:
                changed.add(name)
                grew = True
    return changed
