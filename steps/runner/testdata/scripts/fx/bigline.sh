#!/usr/bin/env bash
# One 10 MiB line, then a short one.
set -Eeuo pipefail
head -c 10485760 /dev/zero | tr '\0' 'a'
printf '\nafter\n'
