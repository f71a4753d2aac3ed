"""Kernel reports in a console log as separate reports (title, stack
symbols, a signature that is the same for the same report in another boot)
and the verdict on them for the sanitizer flavours (kcsan, kasan, faults).

Such kernels report races, bad accesses and leaks anywhere, not only in
ext2.  A report whose stacks or title name a function that fs/ext2 defines
(the build's own symbol list) always fails.  A report elsewhere is known
only if the base snapshot shows the same report under the same flavour and
test, and it is then listed with the base's log as evidence; any other
report fails.  The base's own reports outside ext2 are the reference.
"""

import re

from .qemu import BLOCK_END_RE, BLOCK_MAX, BLOCK_START_RE, PROBLEM_RE

TS_RE = re.compile(r"^\[\s*\d+\.\d+\]\s?")
# "ext2_statfs+0x1a/0x2c0", "ext2_rsv_window_add.isra.0+0x1a/0x2c0"
FRAME_RE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(?:\.[\w.]+)?\+0x[0-9a-f]+/0x[0-9a-f]+")
# "BUG: KCSAN: data-race in ext2_statfs / percpu_counter_add_batch"
KCSAN_TITLE_RE = re.compile(r"BUG: KCSAN: [\w-]+ in ([\w.]+)(?: / ([\w.]+))?")
KMEMLEAK_BEGIN = "FORK-KMEMLEAK-BEGIN"
KMEMLEAK_END = "FORK-KMEMLEAK-END"
KMEMLEAK_OBJ_RE = re.compile(r"unreferenced object 0x[0-9a-f]+ \(size (\d+)\)")
KMEMLEAK_SUMMARY_RE = re.compile(r"kmemleak: \d+ new suspected memory leaks")
# Allocator frames at the top of a kmemleak backtrace: the signature names
# the first frames below them, where the object was asked for.
ALLOCATOR_RE = re.compile(
    r"^_*(kmalloc|kzalloc|kcalloc|kvmalloc|kvzalloc|kvcalloc|kvrealloc|krealloc|kmem_cache|"
    r"kmemleak|slab|alloc_slab|new_slab|allocate_slab|alloc_pages|folio_alloc|pcpu|kstrdup|"
    r"kmemdup|memdup|kasan|do_kmalloc|vmalloc|vzalloc|vmalloc_node|alloc_pages_node|"
    r"percpu_alloc|trace_kmalloc)")


class Report:
    def __init__(self, first_line, lines, kind):
        self.first_line = first_line          # the console line it starts at
        self.lines = lines
        self.kind = kind                      # "console" or "kmemleak"
        self.symbols = []
        for line in lines:
            self.symbols += FRAME_RE.findall(line)
        m = KCSAN_TITLE_RE.search(first_line)
        if m:
            self.symbols += [x.split(".", 1)[0] for x in m.groups() if x]
        if kind == "kmemleak":
            m = KMEMLEAK_OBJ_RE.search(first_line)
            callers = [s for s in FRAME_RE.findall("\n".join(lines)) if not ALLOCATOR_RE.match(s)]
            self.title = "kmemleak: unreferenced object (size %s) from %s" % (
                m.group(1) if m else "?", " < ".join(callers[:3]) or "?")
        else:
            self.title = TS_RE.sub("", first_line).strip()
        self.signature = signature(self.title)

    def in_code(self, functions):
        """Whether a stack frame or the title names one of `functions`."""
        return any(s in functions for s in self.symbols)

    def text(self, limit=40):
        return "\n".join(self.lines[:limit])

    def as_dict(self):
        return {"title": self.title, "signature": self.signature, "kind": self.kind}


def signature(title):
    """The title without what differs from boot to boot: addresses,
    offsets, task names and numbers."""
    t = TS_RE.sub("", title)
    t = re.sub(r"\+0x[0-9a-f]+/0x[0-9a-f]+", "", t)
    t = re.sub(r"0x[0-9a-f]+", "0x?", t)
    t = re.sub(r"\b(task|pid|cpu|CPU)[ :]+\d+", r"\1 ?", t)
    t = re.sub(r"\[#\d+\]", "[#?]", t)
    t = re.sub(r"\b\d+\b", "N", t)
    return re.sub(r"\s+", " ", t).strip()


def parse(log):
    """Every kernel report in console log `log` (a path), in order."""
    with open(log, errors="replace") as fh:
        lines = [l.rstrip("\r\n") for l in fh]
    out = []
    covered = -1
    leak_objects = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if KMEMLEAK_BEGIN in line:
            j = i + 1
            cur = None
            while j < len(lines) and KMEMLEAK_END not in lines[j]:
                if KMEMLEAK_OBJ_RE.search(lines[j]):
                    cur = [lines[j]]
                    leak_objects.append(cur)
                elif cur is not None:
                    cur.append(lines[j])
                j += 1
            i = j + 1
            continue
        if i > covered and PROBLEM_RE.search(line):
            start = i
            for k in range(i - 1, max(-1, i - 4), -1):
                if BLOCK_START_RE.search(lines[k]):
                    start = k
                    break
            end = min(len(lines), start + BLOCK_MAX)
            for k in range(i + 1, end):
                if BLOCK_END_RE.search(lines[k]) or KMEMLEAK_BEGIN in lines[k]:
                    end = k + (1 if BLOCK_END_RE.search(lines[k]) and
                               "FORK-EXIT-STATUS" not in lines[k] else 0)
                    break
            out.append(Report(line, lines[start:end], "console"))
            covered = end - 1
        i += 1
    for obj in leak_objects:
        out.append(Report(obj[0], obj, "kmemleak"))
    if leak_objects:
        # kmemleak's one-line summary is told by the objects themselves
        out = [r for r in out if not (r.kind == "console" and
                                      KMEMLEAK_SUMMARY_RE.search(r.first_line))]
    return out


def judge(reports, ext2_functions, known):
    """Split `reports` into (failing, known) for a sanitizer kernel.

    `known` is "base" for the base snapshot itself (its reports outside
    ext2 are the reference), else {signature: evidence} from the base's
    run.  Each known report is returned as (report, evidence)."""
    functions = set(ext2_functions)
    failing, excused = [], []
    for r in reports:
        if r.in_code(functions):
            failing.append(r)
        elif known == "base":
            excused.append((r, "shown by the base snapshot itself"))
        elif r.signature in known:
            excused.append((r, known[r.signature]))
        else:
            failing.append(r)
    return failing, excused
