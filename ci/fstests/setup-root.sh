#!/bin/sh
# Runs inside the fstests guest root (chroot) when the kit builds it:
# builds fstests in /opt/xfstests and creates the users and host name
# fstests expects.  Part of the root image's key.
set -eu
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export LC_ALL=C
for u in fsgqa fsgqa2 123456-fsgqa; do
	id "$u" >/dev/null 2>&1 || useradd -m -U "$u"
done
echo fstests > /etc/hostname
printf '127.0.0.1\tlocalhost fstests\n::1\tlocalhost\n' > /etc/hosts
cd /opt/xfstests
make -j"$(nproc)"
# what fstests' check reads on every run
test -x ltp/fsstress && test -x ltp/fsx
ls tests/*/group.list >/dev/null
