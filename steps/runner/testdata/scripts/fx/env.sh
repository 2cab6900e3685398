#!/usr/bin/env bash
# Prints the environment contract the runner promises the step scripts.
set -Eeuo pipefail
for v in HALOFORGE_TRACK HALOFORGE_STEP HALOFORGE_RUN_ID HALOFORGE_STATE_DIR HALOFORGE_RUN_DIR \
  HALOFORGE_CACHE_DIR HALOFORGE_SCRIPTS_DIR HALOFORGE_TOOLBOX_DIR HALOFORGE_CACHE_KEY \
  HALOFORGE_PINS_FILE HALOFORGE_TOOLBOX_ENV_FILE HALOFORGE_DRY_RUN HALOFORGE_RESUME HALOFORGE_RESULT_FILE HALOFORGE_FACTS_FILE GPU_TARGET VLLM_REF FX_UNSET_ME; do
  echo "${v}=${!v-<unset>}"
done
echo "cwd=${PWD}"
if [[ -t 0 && -t 1 ]]; then echo "tty=yes"; else echo "tty=no"; fi
