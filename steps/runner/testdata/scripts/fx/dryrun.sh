#!/usr/bin/env bash
# Refuses to do anything real unless HALOFORGE_DRY_RUN=1.
set -Eeuo pipefail
if [[ "${HALOFORGE_DRY_RUN:-}" != 1 ]]; then
  echo "not a dry run" >&2
  exit 1
fi
echo "+ would run: podman pull ${VLLM_REF}"
