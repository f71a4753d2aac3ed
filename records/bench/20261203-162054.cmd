#!/bin/sh
# fork bench 20261203-162054: A = distro/6.1 (abee619e0affc3ce0322a26b9f6d8c294e3ea3b7), B = series/6.1 (d3bf28d66d2af3794864558470c52ce0ea750853)
# as run: tools/fork bench distro/6.1 series/6.1
# run from the top directory of the repository:
flock /tmp/heavy.lock tools/fork bench abee619e0affc3ce0322a26b9f6d8c294e3ea3b7 d3bf28d66d2af3794864558470c52ce0ea750853 --reps 3
