"""Kernel reports in a console log as separate reports (title, stack
symbols, a signature that is the same for the same report in another boot)
and the verdict on them for the sanitizer flavours (kcsan, kasan, faults).

Such kernels report races, bad accesses and leaks anywhere, not only in
ext2.  A report whose stacks or title name a function that fs/ext2 defines
(the build's own symbol list) always fails; for a KCSAN data race the
stacks are the racing accesses' own top frames (KCSAN_ACCESS_FRAMES), so a
race between two virtio functions is not ext2's because the task that
flushed the block plug was in ext2_writepages().  A report elsewhere is known
only if the base snapshot shows the same report under the same flavour and
test, and it is then listed with the base's log as evidence; any other
report fails.  The base's own reports outside ext2 are the reference.

One exception for ext2's code: a commit that changed only some ext2
function bodies relative to the base (funcdiff: a carried upstream fix,
say) still runs stock code everywhere else.  A report in ext2's code is
known there when the base shows the same report (Report.code_key) and no
function the report names, anywhere on its stacks, is in the commit's
changed set (funcdiff: the changed functions, their callers and what they
tail-call).  Never excused this way: ext2's own messages (ext2_error, the
counter cross-check, a BUG in fs/ext2), leaks, races at unknown origin.
"""

import re

from ..repo.funcdiff import ALL
from .qemu import BLOCK_END_RE, BLOCK_MAX, BLOCK_START_RE, PROBLEM_RE

# A report between "=====" (or "cut here") markers is read to its closing
# marker, however long: a KCSAN report has two stacks of up to 64 frames.
DELIMITED_MAX = 220

TS_RE = re.compile(r"^\[\s*\d+\.\d+\]\s?")
# "ext2_statfs+0x1a/0x2c0", "ext2_rsv_window_add.isra.0+0x1a/0x2c0"
FRAME_RE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)(?:\.[\w.]+)?\+0x[0-9a-f]+/0x[0-9a-f]+")
# "BUG: KCSAN: data-race in ext2_statfs / percpu_counter_add_batch"
KCSAN_TITLE_RE = re.compile(r"BUG: KCSAN: [\w-]+(?:: race)? in ([\w.]+)(?: / ([\w.]+))?")
# The header of one racing access's stack: "write to 0x... of 8 bytes by task
# 95 on cpu 1:", "read (marked) to ...", "race at unknown origin, with read
# to ... by interrupt on cpu 0:".
KCSAN_ACCESS_RE = re.compile(r"\bto 0x[0-9a-f]+ of \d+ bytes by (?:task \d+|interrupt) "
                             r"on cpu \d+:")
# How many frames of each racing access's stack count as the code that made
# the access: the function itself and its callers up to the one that called
# a library function (percpu_counter_add_batch <- ext2_..., rb_erase <-
# rsv_window_remove <- ...).  Deeper frames are context: a virtio race in
# the block layer's plug flush has ext2_writepages ten frames down.
KCSAN_ACCESS_FRAMES = 4
# The same header, what identifies the access: its kind ("write", "read
# (marked)", "race at unknown origin, with read") and size.
KCSAN_ACCESS_KIND_RE = re.compile(
    r"(?:^|\]\s)\s*((?:race at unknown origin, with )?"
    r"(?:assert no (?:writes|accesses)|read-write|read|write)"
    r"(?: \([\w ,]+\))*) to 0x[0-9a-f]+ of (\d+) bytes by ")
# Where an interrupt's stack ends and the interrupted context's begins.
IRQ_ENTRY_RE = re.compile(r"^(asm_common_interrupt|asm_sysvec_\w+|asm_exc_\w+|common_interrupt)$")
KMEMLEAK_BEGIN = "FORK-KMEMLEAK-BEGIN"
KMEMLEAK_END = "FORK-KMEMLEAK-END"
# 7.3 also prints "unreferenced object (percpu) 0x..." and "(phys)"
KMEMLEAK_OBJ_RE = re.compile(r"unreferenced object(?: \((?:percpu|phys)\))? 0x[0-9a-f]+ "
                             r"\(size (\d+)\)")
# Reports that are ext2's own whatever their stack: ext2_error()/ext2_msg()
# errors, the series' counter cross-check, a BUG() in fs/ext2.
EXT2_TITLE_RE = re.compile(r"EXT2-fs \(|counter mismatch|fs/ext2/")
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
        # for a KCSAN race: each access's stack (its frames up to an
        # interrupt entry); set in __init__, used by in_code() and context()
        self.access_stacks = None
        m = KCSAN_TITLE_RE.search(first_line)
        if m:
            # A data race is the code of the two accesses: the functions
            # KCSAN names and the top frames of each access's stack, not
            # whatever the interrupted task or the caller chain was doing.
            stacks = kcsan_access_stacks(lines)
            if stacks:
                self.access_stacks = stacks
                self.symbols = [f for st in stacks for f in st[:KCSAN_ACCESS_FRAMES]]
            self.symbols += [x.split(".", 1)[0] for x in m.groups() if x]
        if kind == "kmemleak":
            m = KMEMLEAK_OBJ_RE.search(first_line)
            callers = [s for s in FRAME_RE.findall("\n".join(lines)) if not ALLOCATOR_RE.match(s)]
            self.title = "kmemleak: unreferenced object (size %s) from %s" % (
                m.group(1) if m else "?", " < ".join(callers[:3]) or "?")
        else:
            self.title = TS_RE.sub("", first_line).strip()
        self.signature = signature(self.title)
        # every function the report names: all frames of every stack and
        # the title's (for a change to any of them the report is the commit's)
        self.named = set(FRAME_RE.findall("\n".join(lines))) | set(self.symbols)
        self.ext2_key = None          # set by judge() for a report in ext2's code

    def ext2_message(self):
        """Whether the report is one of ext2's own messages (title or a line)."""
        return any(EXT2_TITLE_RE.search(l) for l in [self.title] + self.lines)

    def in_code(self, functions):
        """Whether a stack frame or the title names one of `functions`, or
        the report (title or any line of it, such as another CPU's ext2
        error printed inside it) is one of ext2's own messages."""
        return self.ext2_message() or any(s in functions for s in self.symbols)

    def context(self, functions):
        """For a KCSAN race judged outside `functions`: the first of them
        deeper in each access's stack (before an interrupt entry), as
        "via f" -- part of the report's identity, so that a base report
        of the same two functions reached from other code does not
        excuse it.  "" when there is none."""
        via = []
        for st in self.access_stacks or []:
            deeper = next((f for f in st[KCSAN_ACCESS_FRAMES:] if f in functions), None)
            if deeper:
                via.append(deeper)
        return " [via %s]" % ", ".join(via) if via else ""

    def code_key(self, functions):
        """What identifies a report in ext2's code across two builds of the
        same ext2 code (the base's and a commit's that did not change it).
        For a KCSAN race: each access's kind, size and function (its top
        frame) and, when that is not ext2's, the first ext2 function among
        its top frames ("read 8 bytes in __percpu_counter_sum via
        ext2_statfs"); the deeper callers vary from boot to boot and are
        left out, and so are offsets (one stock family, such as the
        lockless reads of a group's count at several places of
        ext2_new_blocks(), is one report).  Else the title's signature and
        the ext2 functions on the stacks.  None (never known) for a leak,
        whose one stack is the allocation's and never names a changed free
        path, and for a KCSAN report that does not show both accesses
        ("race at unknown origin": the other side, maybe changed code, is
        not printed)."""
        if self.kind == "kmemleak":
            return None
        if self.access_stacks is not None or KCSAN_TITLE_RE.search(self.first_line):
            kinds = [m.groups() for m in map(KCSAN_ACCESS_KIND_RE.search, self.lines) if m]
            stacks = self.access_stacks or []
            if len(kinds) != 2 or len(stacks) != 2 or not all(stacks):
                return None     # an unknown origin's report has one access
            accesses = []
            for (kind, size), st in zip(kinds, stacks):
                via = next((f for f in st[1:KCSAN_ACCESS_FRAMES] if f in functions), None)
                accesses.append("%s %s bytes in %s%s" % (
                    kind, size, st[0], "" if st[0] in functions or not via else " via " + via))
            return "ext2: KCSAN: " + " / ".join(sorted(accesses))
        return "ext2: %s [%s]" % (signature(self.title), ", ".join(
            sorted(set(self.symbols) & functions)))

    def text(self, limit=40):
        return "\n".join(self.lines[:limit])

    def as_dict(self):
        out = {"title": self.title, "signature": self.signature, "kind": self.kind}
        if self.ext2_key:
            out["ext2_key"] = self.ext2_key
        return out


def kcsan_access_stacks(lines):
    """The stacks of the accesses of a KCSAN report: [[function, ...], ...],
    each from its access line to the next one (a blank console line from
    another CPU does not end it), cut at an interrupt entry (what follows
    is the interrupted context); [] if no access line was found (then all
    frames count)."""
    stacks, cur, cut = [], None, False
    for line in lines:
        if KCSAN_ACCESS_RE.search(line):
            cur, cut = [], False
            stacks.append(cur)
            continue
        if cur is None or cut:
            continue
        for f in FRAME_RE.findall(line):
            if IRQ_ENTRY_RE.match(f):
                cut = True
                break
            cur.append(f)
    return stacks


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


def split_console(lines):
    """(console lines, [kmemleak object blocks], whether a kmemleak list was
    printed).  Between the init's FORK-KMEMLEAK-BEGIN/END markers, lines
    without a printk timestamp are `cat /sys/kernel/debug/kmemleak`
    output; timestamped ones are the kernel's and stay console lines."""
    console, objects, listed = [], [], False
    inside, cur = False, None
    for line in lines:
        if KMEMLEAK_BEGIN in line:
            inside, cur, listed = True, None, True
            continue
        if KMEMLEAK_END in line:
            inside, cur = False, None
            continue
        if inside and not TS_RE.match(line):
            if KMEMLEAK_OBJ_RE.search(line):
                cur = [line]
                objects.append(cur)
            elif cur is not None:
                cur.append(line)
            continue
        console.append(line)
    return console, objects, listed


def parse(log):
    """Every kernel report in console log `log` (a path), in order.

    A report that opens with a start marker ("cut here", "=====") runs to
    its end marker; any other runs to the next start marker or report line.
    So an ext2 error line never takes in the WARNING printed after it."""
    with open(log, errors="replace") as fh:
        lines = [l.rstrip("\r\n") for l in fh]
    console, objects, _ = split_console(lines)
    out = []
    covered = -1
    for i, line in enumerate(console):
        if i <= covered or not PROBLEM_RE.search(line):
            continue
        start = i
        for k in range(i - 1, max(covered, i - 4), -1):
            if BLOCK_START_RE.search(console[k]):
                start = k
                break
        delimited = start < i or BLOCK_START_RE.search(console[start])
        limit = min(len(console), start + (DELIMITED_MAX if delimited else BLOCK_MAX))
        end = limit
        for k in range(i + 1, limit):
            if "FORK-EXIT-STATUS" in console[k] or "FORK-GUEST" in console[k]:
                end = k
                break
            if start < i or BLOCK_START_RE.search(console[start]):
                if BLOCK_END_RE.search(console[k]):
                    end = k + 1
                    break
                if BLOCK_START_RE.search(console[k]) and k > i + 1:
                    end = k
                    break
            elif BLOCK_START_RE.search(console[k]) or PROBLEM_RE.search(console[k]):
                end = k
                break
        out.append(Report(line, console[start:end], "console"))
        covered = end - 1
    for obj in objects:
        out.append(Report(obj[0], obj, "kmemleak"))
    if objects:
        # kmemleak's one-line summary is told by the objects themselves
        out = [r for r in out if not (r.kind == "console" and
                                      KMEMLEAK_SUMMARY_RE.search(r.first_line))]
    return out


def kmemleak_listed(log):
    """Whether the guest init printed kmemleak's list (its scan ran)."""
    with open(log, errors="replace") as fh:
        return split_console([l.rstrip("\r\n") for l in fh])[2]


def judge(reports, ext2_functions, known, changed=ALL):
    """Split `reports` into (failing, known) for a sanitizer kernel.

    `known` is "base" for the base snapshot itself (its reports outside
    ext2 are the reference), else {signature: evidence} from the base's
    run, with its reports in ext2's code under their ext2_key.
    `changed`: the ext2 functions the commit changed relative to the base
    (funcdiff.changed_functions), or ALL.  Each known report is returned
    as (report, evidence)."""
    functions = set(ext2_functions)
    failing, excused = [], []
    for r in reports:
        if not r.in_code(functions):
            r.signature = signature(r.title) + r.context(functions)
        elif not r.ext2_message():
            r.ext2_key = r.code_key(functions)
        if r.in_code(functions):
            touched = ALL if changed == ALL else r.named & set(changed)
            if r.ext2_key and known != "base" and r.ext2_key in known and not touched:
                excused.append((r, "stock ext2 code (the commit changes %s relative to the "
                                "base, none of them on these stacks): %s" % (
                                    ", ".join(sorted(changed)) or "no ext2 function",
                                    known[r.ext2_key])))
            else:
                failing.append(r)   # ext2's, in code the commit changed or the base lacks
        elif r.kind == "kmemleak" and r.title.endswith(" from ?"):
            failing.append(r)       # a leak whose origin is unknown
        elif known == "base":
            excused.append((r, "shown by the base snapshot itself"))
        elif r.signature in known:
            excused.append((r, known[r.signature]))
        else:
            failing.append(r)
    return failing, excused
