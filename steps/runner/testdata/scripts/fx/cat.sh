#!/usr/bin/env bash
# Copies FX_FILE to the pty: the throughput and memory benchmarks.
set -Eeuo pipefail
exec cat "${FX_FILE:?}"
