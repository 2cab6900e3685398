#!/usr/bin/env bash
# Prints some lines, then fails with exit code 3.
set -Eeuo pipefail
for i in $(seq 1 30); do echo "compiling unit ${i}"; done
echo "error: the compiler gave up" >&2
exit 3
