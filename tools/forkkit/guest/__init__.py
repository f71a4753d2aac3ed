"""guest: a kernel booted in QEMU: the initramfs, the boot and its
console (qemu, console), the kernel reports in it (reports), the guest
tests with their disks and the host's verdict on them (guesttests), and
the Debian root fstests runs in (fsroot)."""
