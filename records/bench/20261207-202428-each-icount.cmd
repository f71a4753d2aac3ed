#!/bin/sh
# fork bench 20261207-202428: A = next-topic/7.3/gd-hints (27bfa4e05c0deb0171afcdb0c4891d48fda8d5da), B = e964376a9e7f705b7c60e384c5509636fc8b1938 (e964376a9e7f705b7c60e384c5509636fc8b1938)
# as run: tools/fork bench next-topic/7.3/gd-hints next-topic/7.3/inode-generation --control --mode icount --each --lockstat --only seed
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench 27bfa4e05c0deb0171afcdb0c4891d48fda8d5da e964376a9e7f705b7c60e384c5509636fc8b1938 --reps 3 --control --mode icount --each --lockstat --only seed
