#!/usr/bin/env bash
# Prints to stdout and stderr (with colour) and succeeds: stderr is not failure.
set -Eeuo pipefail
echo "hello from ${HALOFORGE_STEP}"
printf '\033[1;33mwarning:\033[0m this goes to stderr\n' >&2
echo "done"
