#!/usr/bin/env bash
# Output that never ends a line.
set -Eeuo pipefail
for i in $(seq 1 2000); do printf 'chunk%d ' "${i}"; done
