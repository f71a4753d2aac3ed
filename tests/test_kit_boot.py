"""fork boot without QEMU: console log scanning, the qemu command line, the
initramfs cpio writer, the console follower, and the missing-qemu message."""

import os
import subprocess

import pytest

from forkkit.guest import console, initramfs, qemu as cmd_boot
from forkkit.core.errors import ForkError

CONSOLE = """\
# qemu-system-x86_64 -append console=ttyS0 panic=-1
[    0.000000] Linux version 9.9.1 (forkkit@forkkit)
[    0.120000] Kernel command line: console=ttyS0 panic=-1 rdinit=/init
[    0.500000] EXT2-fs (vda): warning: mounting unchecked fs, running e2fsck is recommended
FORK-GUEST-START 9.9.1 cpus=2
hello from the guest
RESULT prog=fsreport bfree=100 ffree=20
FORK-WARN: cannot unmount /mnt/x
FORK-EXIT-STATUS: 3
[    1.000000] reboot: Restarting system
"""

REPORTS = [
    "[    2.000000] WARNING: CPU: 1 PID: 42 at fs/ext2/balloc.c:100 ext2_new_blocks+0x1/0x2",
    "[    2.100000] BUG: kernel NULL pointer dereference, address: 0000000000000008",
    "[    2.200000] WARNING: possible circular locking dependency detected",
    "[    2.300000] Kernel panic - not syncing: Attempted to kill init! exitcode=0x00000100",
    "[    2.400000] EXT2-fs (vda): error: ext2_check_page: bad entry in directory #2",
    "[    2.500000] ======================================================",
]


def write(tmp_path, text, name="console.log"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_scan_clean_log(tmp_path):
    log = write(tmp_path, CONSOLE)
    assert cmd_boot.scan(log) == (3, [])
    assert cmd_boot.guest_output(log) == ["hello from the guest",
                                          "RESULT prog=fsreport bfree=100 ffree=20",
                                          "FORK-WARN: cannot unmount /mnt/x"]


# The serial console carries the kernel's messages and the guest's output
# on one line discipline: a printk can land in the middle of a line the
# guest is writing (seen in a bench run: "POINT id=2 iter=[    1.948612]
# EXT4-fs (vdc): mounted ...", then "0 workload=..." on the next line).
TANGLED = """\
FORK-GUEST-START 9.9.1 cpus=2
POINT id=2 iter=[    1.948612] EXT4-fs (vdc): mounted filesystem r/w without journal.\r
[    1.948700] second kernel line\r
0 workload=statfs fs=ext4\r
RESULT prog=statfsbench calls=1\r
FORK-EXIT-STA[    2.000000] reboot: late line\r
TUS: 4\r
"""


def test_guest_lines_split_by_a_printk_are_joined_again(tmp_path):
    log = write(tmp_path, TANGLED)
    assert cmd_boot.scan(log) == (4, [])
    assert cmd_boot.guest_output(log) == [
        "[    1.948612] EXT4-fs (vdc): mounted filesystem r/w without journal.",
        "[    1.948700] second kernel line",
        "POINT id=2 iter=0 workload=statfs fs=ext4",
        "RESULT prog=statfsbench calls=1",
        "[    2.000000] reboot: late line"]


def test_scan_reports_kernel_problems(tmp_path):
    log = write(tmp_path, CONSOLE + "\n".join(REPORTS) + "\n")
    rc, problems = cmd_boot.scan(log)
    assert rc == 3
    assert problems == REPORTS[:5]
    res = cmd_boot.BootResult(rc=0, log=log, seconds=1, problems=problems, error=None, output=[])
    assert not res.ok
    assert cmd_boot.failure_message(res).startswith(
        "kernel report in the console log (%s):\n%s" % (log, REPORTS[0]))


# One line per pattern in each supported version's own spelling, copied from
# the format strings of linux-source-6.1, -6.12 and -7.3 (file named per line).
SPELLINGS = [
    # arch/x86/kernel/dumpstack.c __die_header(): 6.1 has no "Oops: " prefix
    ("6.1", "[    5.1] invalid opcode: 0000 [#1] PREEMPT SMP NOPTI"),
    ("6.12", "[    5.1] Oops: invalid opcode: 0000 [#1] PREEMPT SMP NOPTI"),
    ("6.1", "[    5.1] stack segment: 0000 [#1] SMP"),
    ("6.12", "[    5.1] Oops: general protection fault, probably for non-canonical address "
             "0xdead000000000108: 0000 [#1] SMP"),
    # lib/bug.c report_bug()
    ("6.1", "[    5.0] kernel BUG at fs/ext2/balloc.c:243!"),
    ("6.12", "[    5.0] kernel BUG at fs/ext2/balloc.c:262!"),
    # arch/x86/kernel/traps.c exc_double_fault()
    ("6.12", "[    5.0] PANIC: double fault, error_code: 0x0"),
    # kernel/rcu/tree_stall.h and tree_exp.h (pr_fmt "rcu: ")
    ("6.1", "[   60.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:"),
    ("6.12", "[   60.0] rcu: INFO: rcu_sched self-detected stall on CPU"),
    ("6.12", "[   60.0] rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: {"),
    # kernel/watchdog.c (pr_fmt "watchdog: ")
    ("6.1", "[   30.0] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [stress:81]"),
    ("6.1", "[   30.0] NMI watchdog: Watchdog detected hard LOCKUP on cpu 1"),
    ("6.12", "[   30.0] watchdog: Watchdog detected hard LOCKUP on cpu 1"),
    # kernel/hung_task.c
    ("6.12", "[  150.0] INFO: task stress:81 blocked for more than 122 seconds."),
    # fs/ext4/super.c __ext4_error()
    ("6.12", "[    9.0] EXT4-fs error (device vda): ext4_lookup:1855: inode #2: comm ls: "
             "iget: bad extra_isize 4 (inode size 256)"),
    # fs/ext2/super.c ext2_error()
    ("6.12", "[    9.0] EXT2-fs (vda): error: ext2_free_blocks: Freeing blocks not in "
             "datazone - block = 4294967295, count = 1"),
    # lib/ubsan.c
    ("6.1", "[    9.0] UBSAN: array-index-out-of-bounds in fs/ext2/balloc.c:71:12"),
    ("6.12", "[    9.0] UBSAN: shift-out-of-bounds in fs/ext2/inode.c:1402:20"),
    # kernel/kcsan/report.c, mm/kasan/report.c
    ("6.12", "[    9.0] BUG: KCSAN: data-race in ext2_try_to_allocate_with_rsv / "
             "group_adjust_blocks"),
    ("6.1", "[    9.0] BUG: KASAN: use-after-free in ext2_rsv_window_add+0x1d/0x90"),
    # mm/kmemleak.c
    ("6.12", "[   70.0] kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)"),
    ("7.3", "[   70.0] kmemleak: Cannot allocate a kmemleak_object structure"),
    ("7.3", "[   70.0] kmemleak: Memory pool empty, consider increasing "
            "CONFIG_DEBUG_KMEMLEAK_MEM_POOL_SIZE"),
    ("6.1", "[   70.0] kmemleak: Kernel memory leak detector disabled"),
    ("7.3", "FORK-KMEMLEAK-ERROR: the scan failed"),
    # lib/list_debug.c
    ("6.1", "[    9.0] list_add corruption. prev->next should be next (ffff8880), but was "
            "ffff8881. (prev=ffff8882)."),
    ("6.12", "[    9.0] list_del corruption, ffff888003c4a2c8->next is LIST_POISON1 "
             "(dead000000000100)"),
    # 7.3: kernel/hung_task.c adds " in I/O wait"; lib/bug.c's WARNING
    ("7.3", "[  150.0] INFO: task stress:81 blocked in I/O wait for more than 122 seconds."),
    ("7.3", "[  150.0] INFO: task stress:81 blocked for more than 122 seconds."),
    ("7.3", "[    5.0] WARNING: fs/ext2/balloc.c:100 at ext2_new_blocks+0x1/0x2, CPU#1: "
            "stress/80"),
    ("7.3", "[    5.1] Oops: invalid opcode: 0000 [#1] SMP NOPTI"),
    # mm/page_alloc.c, kernel/locking/lockdep.c, kernel/panic.c
    ("6.1", "[    9.0] BUG: Bad page state in process stress  pfn:0a1b2"),
    ("6.12", "[    9.0] INFO: trying to register non-static key."),
    ("6.12", "[    9.0] Kernel panic - not syncing: Fatal exception"),
]


# What sanitizer kernels print at every boot, no report (7.3's spelling).
BENIGN = [
    "[    0.6] kcsan: non-strict mode configured - use CONFIG_KCSAN_STRICT=y to see all "
    "data races",
    "[    1.0] kcsan: selftest: 3/3 tests passed",
    "[    0.0] kasan: KernelAddressSanitizer initialized (generic)",
    "[    1.0] kmemleak: Kernel memory leak detector initialized (mem pool available: 15744)",
    "[    1.0] kmemleak: Automatic memory scanning thread started",
]


@pytest.mark.parametrize("line", BENIGN)
def test_scan_passes_what_sanitizers_print_at_boot(tmp_path, line):
    log = write(tmp_path, "FORK-GUEST-START\n" + line + "\nFORK-EXIT-STATUS: 0\n")
    assert cmd_boot.scan(log) == (0, []), line


@pytest.mark.parametrize("version,line", SPELLINGS)
def test_scan_each_versions_spelling(tmp_path, version, line):
    log = write(tmp_path, "FORK-GUEST-START\nFORK-EXIT-STATUS: 0\n" + line + "\n")
    rc, problems = cmd_boot.scan(log)
    assert rc == 0 and problems == [line], (version, line)


def test_report_is_quoted_whole(tmp_path):
    report = [
        "[   12.0] ==================================================================",
        "[   12.0] BUG: KCSAN: data-race in ext2_rsv_window_add / rsv_window_remove",
        "[   12.0] ",
        "[   12.0] write to 0xffff888004a3c0d8 of 8 bytes by task 80 on cpu 1:",
        "[   12.0]  rsv_window_remove+0x2c/0x60",
        "[   12.0] ",
        "[   12.0] Reported by Kernel Concurrency Sanitizer on:",
        "[   12.0] ==================================================================",
    ]
    log = write(tmp_path, "FORK-GUEST-START\n" + "\n".join(report) +
                "\n[   13.0] after the report\nFORK-EXIT-STATUS: 0\n")
    rc, problems = cmd_boot.scan(log)
    assert problems == [report[1]]
    res = cmd_boot.BootResult(rc=rc, log=log, seconds=1, problems=problems, error=None,
                              output=[])
    msg = cmd_boot.failure_message(res)
    assert msg == "kernel report in the console log (%s):\n%s" % (log, "\n".join(report))
    # a WARNING from its "cut here" line to its end marker
    warn = ["[ 2.0] ------------[ cut here ]------------",
            "[ 2.0] WARNING: CPU: 0 PID: 1 at fs/ext2/balloc.c:100 ext2_new_blocks+0x1/0x2",
            "[ 2.0] Call Trace:",
            "[ 2.0] ---[ end trace 0000000000000000 ]---"]
    log = write(tmp_path, "\n".join(warn) + "\n[ 3.0] unrelated\nFORK-EXIT-STATUS: 0\n",
                name="warn.log")
    assert cmd_boot.report_block(log, warn[1]) == "\n".join(warn)


@pytest.mark.parametrize("line", [
    "possible recursive locking detected",
    "[ 1.0] ==================================================================\n"
    "[ 1.0] BUG: KASAN: use-after-free in ext2_xattr_get+0x10/0x20",
    "UBSAN: shift-out-of-bounds in fs/ext2/balloc.c:12:3",
    "general protection fault, probably for non-canonical address",
    "INFO: task stress:77 blocked for more than 120 seconds.",
    "fsreport: counter mismatch: bfree 10 != 12",
    "VFS: Unable to mount root fs on unknown-block(0,0)",
    "[ 3.0] Oops: 0002 [#1] PREEMPT SMP",
    "DEBUG_LOCKS_WARN_ON(1)",
    "inconsistent lock state",
])
def test_scan_other_reports(tmp_path, line):
    log = write(tmp_path, "FORK-EXIT-STATUS: 0\n" + line + "\n")
    rc, problems = cmd_boot.scan(log)
    assert rc == 0 and problems, line


def test_scan_without_exit_marker(tmp_path):
    log = write(tmp_path, "[ 0.1] Linux version 9.9.1\n")
    assert cmd_boot.scan(log) == (None, [])


def test_boot_result_ok_and_messages(tmp_path):
    log = write(tmp_path, CONSOLE)
    ok = cmd_boot.BootResult(rc=0, log=log, seconds=1, problems=[], error=None, output=[])
    assert ok.ok
    bad = cmd_boot.BootResult(rc=3, log=log, seconds=1, problems=[], error=None, output=[])
    assert not bad.ok
    assert cmd_boot.failure_message(bad) == "guest command exited 3 (console log: %s)" % log
    hung = cmd_boot.BootResult(rc=255, log=log, seconds=1, problems=[], error="guest timed out",
                               output=[])
    assert cmd_boot.failure_message(hung) == "guest timed out"


def test_qemu_command_line(tmp_path, monkeypatch):
    monkeypatch.setattr(cmd_boot.shutil, "which", lambda name: "/usr/bin/" + name)
    disk = tmp_path / "a.img"
    disk.write_bytes(b"\0" * 512)
    cmd = cmd_boot.qemu_cmd("bz", "initrd", [str(disk)], 2, "512", False, "quiet")
    assert cmd[0] == "/usr/bin/qemu-system-x86_64"
    assert cmd[cmd.index("-accel") + 1] == "tcg,thread=multi"
    assert cmd[cmd.index("-kernel") + 1] == "bz" and cmd[cmd.index("-initrd") + 1] == "initrd"
    assert cmd[cmd.index("-append") + 1].endswith("rdinit=/init printk.devkmsg=on quiet")
    assert "file=%s,format=raw,if=virtio,cache=unsafe" % disk in cmd
    assert "-no-reboot" in cmd
    kvm = cmd_boot.qemu_cmd("bz", "initrd", [], 1, "512", True, "")
    assert kvm[kvm.index("-accel") + 1] == "kvm"
    ic = cmd_boot.qemu_cmd("bz", "initrd", [], 2, "512", False, "", icount=True)
    assert ic[ic.index("-accel") + 1] == "tcg,thread=single"
    assert ic[ic.index("-icount") + 1] == "shift=0,sleep=off" and ic.count("-accel") == 1
    with pytest.raises(ForkError, match="disk image .*nope.img does not exist"):
        cmd_boot.qemu_cmd("bz", "initrd", [str(tmp_path / "nope.img")], 1, "512", False, "")


FAKE_QEMU = """#!/bin/sh
echo 'POINT one'
sleep 0.5
echo 'FORK-EXIT-STATUS: 0'
printf 'last words'
"""


def fake_qemu(tmp_path, monkeypatch):
    """FAKE_QEMU first on PATH, a work directory and a one-file base
    initramfs of the test's own."""
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "qemu-system-x86_64").write_text(FAKE_QEMU)
    (bindir / "qemu-system-x86_64").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    base = tmp_path / "base.cpio"
    base.write_bytes(b"\0" * 512)
    monkeypatch.setattr(initramfs, "base_archive", lambda extra_files=None, log=None: str(base))


def test_run_guest_follows_the_console_while_qemu_runs(tmp_path, monkeypatch):
    """run_guest(follow=F) runs F while QEMU does: F sees the console
    during the boot, and after QEMU exits it has been stopped and handed
    every line, the last one without a line end too."""
    fake_qemu(tmp_path, monkeypatch)
    batches = []

    class Seen(console.Follower):
        def lines(self, new):
            batches.append(list(new))

    log = str(tmp_path / "console.log")
    follower = Seen(log, 0.05)
    res = cmd_boot.run_guest(str(tmp_path / "bzImage"), "true", log=log, follow=follower)
    assert res.rc == 0 and res.error is None
    assert not follower.is_alive()
    seen = [line for batch in batches for line in batch]
    assert seen[0].startswith("# ") and "qemu-system-x86_64" in seen[0]
    assert seen[1:] == ["POINT one", "FORK-EXIT-STATUS: 0", "last words"]
    # read while QEMU slept, not only at the end
    assert any("POINT one" in b and "FORK-EXIT-STATUS: 0" not in b for b in batches), batches


def slot_comes_late(module, monkeypatch):
    """`module`'s clock (time.monotonic) jumps 1000 s as its guest slot is
    taken: a boot's time that counts the wait shows it."""
    real, skew = module.time.monotonic, [0.0]
    monkeypatch.setattr(module.time, "monotonic", lambda: real() + skew[0])

    class SlowSlots(module.GuestSlots):
        def __enter__(self):
            got = super().__enter__()
            skew[0] += 1000.0
            return got

    monkeypatch.setattr(module, "GuestSlots", SlowSlots)


def test_a_guests_time_starts_once_it_holds_its_slot(tmp_path, monkeypatch):
    """The wait for a guest slot is no part of the guest's time: a clock
    that jumps 1000 s while the slot is taken does not reach res.seconds."""
    fake_qemu(tmp_path, monkeypatch)
    slot_comes_late(cmd_boot, monkeypatch)
    res = cmd_boot.run_guest(str(tmp_path / "bzImage"), "true", log=str(tmp_path / "c.log"))
    assert res.rc == 0 and 0 <= res.seconds < 1000, res.seconds


def test_qemu_missing(kit, tmp_path):
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"not a kernel")
    path = kit.path_without("qemu-system-x86_64")
    res = kit.fork("boot", "--kernel", kernel, "--", "true", env={"PATH": path},
                   subprocess_=True)
    assert res.rc == 1
    assert "qemu-system-x86_64 not found" in res.err
    assert "apt-get install qemu-system-x86" in res.err
    # checked before anything is built (there is not even a kernel tree)
    res = kit.fork("boot", env={"PATH": path})
    assert res.rc == 1
    assert "apt-get install qemu-system-x86" in res.err


def cpio_list(data, tmp_path, verbose=False):
    p = tmp_path / "list.cpio"
    p.write_bytes(data)
    proc = subprocess.run(["cpio", "-t" + ("v" if verbose else ""), "--quiet", "-F", str(p)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.splitlines()


def test_cpio_writer(tmp_path):
    c = initramfs.Cpio()
    c.dir("bin")
    c.file("bin/hello", b"#!/bin/sh\necho hi\n", 0o755)
    c.file("etc-motd", b"odd length!", 0o644)
    c.symlink("bin/sh", "busybox")
    c.chardev("console", 5, 1)
    data = c.bytes()
    assert len(data) % 512 == 0
    assert cpio_list(data, tmp_path) == ["bin", "bin/hello", "etc-motd", "bin/sh", "console"]
    listing = cpio_list(data, tmp_path, verbose=True)
    assert listing[1].startswith("-rwxr-xr-x")
    assert listing[2].startswith("-rw-r--r--")
    assert listing[3].startswith("lrwxrwxrwx") and listing[3].endswith("bin/sh -> busybox")
    assert listing[4].startswith("crw-------")
    # extract (without the device node) and compare contents
    c2 = initramfs.Cpio()
    c2.dir("d")
    c2.file("d/f", b"x" * 1001, 0o600)
    c2.symlink("d/l", "f")
    out = tmp_path / "x"
    out.mkdir()
    proc = subprocess.run(["cpio", "-i", "-d", "--quiet"], input=c2.bytes(), cwd=str(out),
                          capture_output=True)
    assert proc.returncode == 0, proc.stderr
    assert (out / "d" / "f").read_bytes() == b"x" * 1001
    assert os.readlink(out / "d" / "l") == "f"


def test_base_archive_and_command(kit, tmp_path):
    if not os.path.exists(initramfs.BUSYBOX):
        pytest.skip("busybox-static not installed")
    base = initramfs.base_archive()
    assert base.startswith(str(kit.work / "initramfs" / "base-"))
    assert initramfs.base_archive() == base           # cached
    names = cpio_list(open(base, "rb").read(), tmp_path)
    for want in ("bin", "dev/console", "dev/null", "bin/busybox", "init", "fork", "mnt"):
        assert want in names
    dest = tmp_path / "initrd.cpio"
    initramfs.with_command(base, "#!/bin/sh\nuname -a\n", str(dest))
    data = dest.read_bytes()
    size = os.path.getsize(base)
    assert data[:size] == open(base, "rb").read()
    assert cpio_list(data[size:], tmp_path) == ["fork/cmd"]
    out = tmp_path / "cmd"
    out.mkdir()
    subprocess.run(["cpio", "-i", "-d", "--quiet"], input=data[size:], cwd=str(out), check=True)
    assert (out / "fork" / "cmd").read_text() == "#!/bin/sh\nuname -a\n"
    # a changed init makes a new base archive; the old one stays (another
    # run may be about to read it: test_kit_concurrency.py)
    (kit.repo / "ci" / "guest" / "init").write_text("#!/bin/busybox sh\necho changed\n")
    assert initramfs.base_archive() != base
    assert os.path.exists(base)


def test_boot_passes_the_flavour_boot_arguments_before_the_users(tmp_path, monkeypatch):
    """`boot --config kasan` boots with the arguments check and bisect give a
    kasan kernel (acpi=noirq: without it the boot can hang, guest/qemu.py), then
    --append; the base flavour adds nothing."""
    from forkkit.verbs import boot as verb
    kernel = tmp_path / "bzImage"
    kernel.write_bytes(b"\0")
    seen = []

    def fake_run_guest(kernel, script, disks, timeout, smp, mem, kvm, append, prog=None):
        seen.append(append)
        return cmd_boot.BootResult(rc=0, log=str(tmp_path / "c.log"), seconds=1, problems=[],
                                   error=None, output=[])

    monkeypatch.setattr(verb, "run_guest", fake_run_guest)
    monkeypatch.setattr(verb, "qemu_binary", lambda: "qemu-system-x86_64")

    def args(config, append):
        return type("A", (), dict(kernel=str(kernel), config=config, rest=[], disk=[],
                                  timeout=60, smp=2, mem="2048", kvm=False, append=append))

    assert verb.main(args("kasan", "loglevel=8")) in (0, None)
    assert verb.main(args("base", "")) in (0, None)
    assert seen[0].split() == ["kasan_multi_shot", "acpi=noirq", "loglevel=8"]
    assert seen[1] == ""


def test_an_interrupted_guest_does_not_outlive_its_slot(tmp_path, monkeypatch):
    """Ctrl-C (or any error) while QEMU runs: run_guest kills QEMU before
    it gives the guest slot back, and removes the guest's initramfs."""
    monkeypatch.setenv("FORK_WORKDIR", str(tmp_path / "work"))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    pidfile = tmp_path / "qemu.pid"
    (bindir / "qemu-system-x86_64").write_text(
        "#!/bin/sh\necho $$ > %s\nexec sleep 60\n" % pidfile)
    (bindir / "qemu-system-x86_64").chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (bindir, os.environ["PATH"]))
    base = tmp_path / "base.cpio"
    base.write_bytes(b"\0" * 512)
    monkeypatch.setattr(initramfs, "base_archive", lambda extra_files=None, log=None: str(base))
    real_wait = subprocess.Popen.wait

    def interrupted(self, timeout=None):
        if timeout is not None:
            for _ in range(100):
                if pidfile.exists() and pidfile.read_text().strip():
                    break
                real_wait(self, 0.05) if self.poll() is not None else __import__("time").sleep(0.05)
            raise KeyboardInterrupt
        return real_wait(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cmd_boot.run_guest(str(tmp_path / "bzImage"), "true", log=str(tmp_path / "c.log"),
                           timeout=30)
    pid = int(pidfile.read_text())
    alive = os.path.exists("/proc/%d" % pid) and \
        open("/proc/%d/stat" % pid).read().split()[2] != "Z"
    assert not alive, "QEMU (pid %d) still runs after the interrupted run_guest" % pid
    assert not [n for n in os.listdir(tmp_path / "work" / "tmp") if n.startswith("initrd")]
