"""Which fs/ext2 functions a commit changed relative to the series' base.

The sanitizer rule excuses a report in ext2's code only where that code is
stock: the commit has not changed any ext2 function the report names, and
the base shows the same report (verify/check.py, reports.judge).  "Changed" is
decided conservatively:

* a change to any file outside fs/ext2, to a file of fs/ext2 that is not a
  .c file (ext2.h's inline functions, macros and structures reach every
  function), or to a .c file outside its function bodies (a macro, a
  structure, a static variable, a prototype) changes everything: ALL;
* otherwise the functions whose text differs (or that one side lacks),
  and every ext2 function that calls one of them, directly or through
  others: a changed static helper may be inlined into its caller, and then
  no stack names it;
* and, once the commit is built, every function those jump to at their
  end (tail calls, read from the build's objects: kbuild.tail_calls()),
  and so on through ext2's own: a function that ends in a jump has no
  frame of its own below it (the kasan and faults builds make
  ext2_file_write_iter() jump into generic_file_write_iter(), say), so
  its jump targets stand for it on a stack (with_tail_calls()).

Not followed: calls through function pointers (an operations table) and
state a changed function leaves behind for other code.  A report's ext2
code must then still match the base's report exactly (reports.judge).

Function bodies are found in kernel style: a definition's "{" and its
closing "}" stand alone at column 0 (Documentation/process/coding-style.rst).
"""

import re

from .git import git

ALL = "all"        # the commit changed ext2 beyond function bodies
EXT2_DIR = "fs/ext2/"

IDENT_RE = re.compile(r"\b[A-Za-z_]\w*\b")
# comments, and strings (a "/*" in a string opens no comment)
COMMENT_RE = re.compile(r'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|/\*.*?\*/|//[^\n]*', re.S)
C_KEYWORDS = set("""auto bool char const double enum extern float int long register return
short signed sizeof static struct typeof __typeof__ typeof_unqual union unsigned void volatile
inline if else for while do switch case default goto break continue""".split())
# the annotations with "(...)" that may stand before a definition's name
PRE_NAME_RE = re.compile(r"^__(printf|scanf|attribute__|section|aligned|alloc_size|"
                         r"realloc_size|assume_aligned|no_\w+|nocfi|diagnose_as)$")
# what an annotation looks like: a first candidate of this form followed
# by another makes the header ambiguous
ANNOTATION_LIKE_RE = re.compile(r"^__[a-z_]+$")


def uncomment(text):
    """`text` with its comments blanked and its strings emptied."""
    return COMMENT_RE.sub(lambda m: '""' if m.group(0)[0] in "\"'" else " ", text)


def definition_name(header):
    """The name a definition's header declares: the first identifier
    followed by "(" outside any parentheses, comments removed, after the
    annotations that may precede it (__printf(2, 3), __attribute__((...)));
    those that follow the parameter list (__releases(l),
    __must_hold_shared(...)) come after it.  None (the body counts as
    unnamed) if there is none, if it is a keyword ("int (*f(void))(void)"),
    if an unknown annotation-like "__name(" precedes it, or if a comment is
    left open (the header is not code)."""
    code = uncomment(header)
    if "/*" in code or "*/" in code:
        return None
    depth, cands = 0, []
    for m in re.finditer(r"[()]|[A-Za-z_]\w*", code):
        tok = m.group(0)
        if tok == "(":
            depth += 1
        elif tok == ")":
            depth -= 1
        elif depth == 0 and re.match(r"\s*\(", code[m.end():]) and not PRE_NAME_RE.match(tok):
            cands.append(tok)
    if not cands or cands[0] in C_KEYWORDS:
        return None
    if ANNOTATION_LIKE_RE.match(cands[0]) and len(cands) > 1:
        return None     # "static __unknown(1) int f(...)": which is the name?
    return cands[0]


def open_comment(text):
    """Whether `text` ends inside a /* comment."""
    return "/*" in uncomment(text)


def split_functions(text):
    """({name: [definition text, ...]}, text outside the definitions, how
    many bodies had no name) of a kernel-style C file.  A definition is its
    header (the lines since the last blank, ";"-ending, "}"-ending or
    preprocessor line outside a comment, comments included) through the
    "}" at column 0 that closes the "{" at column 0."""
    funcs, outside, header = {}, [], []
    lines = text.split("\n")
    i, continued, unnamed = 0, False, 0
    while i < len(lines):
        line = lines[i]
        name = definition_name("\n".join(header)) if line.rstrip() == "{" else None
        if line.rstrip() == "{" and not name:
            unnamed += 1
        if name:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("}"):
                j += 1
            funcs.setdefault(name, []).append("\n".join(header + lines[i:j + 1]))
            header = []
            i = j + 1
            continue
        header.append(line)
        stripped = line.rstrip()
        # a preprocessor line and its "\" continuations end a header
        preprocessor = stripped.startswith("#") or continued
        continued = preprocessor and stripped.endswith("\\")
        # ... unless inside a comment (" * return 0;" in a kernel-doc)
        if (not stripped or stripped.endswith((";", "}")) or preprocessor) \
                and not open_comment("\n".join(header)):
            outside += header
            header = []
        i += 1
    outside += header
    return funcs, "\n".join(outside), unnamed


def _show(rev, path):
    return git(["show", "%s:%s" % (rev, path)])


def changed_functions(base, commit):
    """The names of the fs/ext2 functions `commit` changed relative to
    `base`, with their callers, or ALL (see the module's text)."""
    names = git(["diff", "--name-only", "--no-renames", base, commit]).split()
    if any(not n.startswith(EXT2_DIR) or not n.endswith(".c") for n in names):
        return ALL
    base_files = set(git(["ls-tree", "--name-only", base, EXT2_DIR]).split())
    # every .c file at `commit`, parsed once: the changed ones are compared,
    # all of them give the callers
    new = {path: split_functions(_show(commit, path))
           for path in git(["ls-tree", "--name-only", commit, EXT2_DIR]).split()
           if path.endswith(".c")}
    if any(unnamed for _, _, unnamed in new.values()):
        return ALL              # a body without a name: its calls are unknown
    changed = set()
    for path in names:
        old = split_functions(_show(base, path)) if path in base_files else ({}, "", 0)
        now = new.get(path, ({}, "", 0))
        if old[1] != now[1] or old[2]:
            return ALL          # outside function bodies, or a body without a name
        changed |= {f for f in set(old[0]) | set(now[0]) if old[0].get(f) != now[0].get(f)}
    if not changed:
        return changed
    # callers, to a fixed point, over every .c file of fs/ext2 at `commit`
    bodies = {}
    for funcs, _, _ in new.values():
        for name, texts in funcs.items():
            bodies.setdefault(name, set()).update(IDENT_RE.findall(uncomment("\n".join(texts))))
    grew = True
    while grew:
        grew = False
        for name, idents in bodies.items():
            if name not in changed and (idents - {name}) & changed:
                changed.add(name)
                grew = True
    return changed


def with_tail_calls(changed, tail_calls, ext2_functions):
    """`changed` and every function its functions jump to at their end
    (`tail_calls`: {function: [target, ...]} of the commit's build), to a
    fixed point through ext2's own functions.  ALL stays ALL; so is the
    answer when the build's jumps are unknown (None, or "?" for a jump
    whose target was not found), and when a jump leaves ext2: that
    function may jump on (generic_file_read_iter() into filemap_read())
    and the build's objects of fs/ext2 do not show it."""
    if changed == ALL or tail_calls is None:
        return ALL
    ext2_functions = set(ext2_functions)
    out, todo = set(changed), list(changed)
    while todo:
        for target in tail_calls.get(todo.pop(), ()):
            if target == "?" or target not in ext2_functions:
                return ALL
            if target not in out:
                out.add(target)
                todo.append(target)
    return out
