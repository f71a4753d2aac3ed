#!/bin/sh
# fork bench 20261203-150055: A = distro/6.12 (e178aadb5b230f9cb52f206d63676d33109c6327), B = series/6.12 (023aeab6a125b71f1f1feacfb66a57021804d777)
# as run: tools/fork bench --lockstat
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench e178aadb5b230f9cb52f206d63676d33109c6327 023aeab6a125b71f1f1feacfb66a57021804d777 --reps 3 --lockstat
