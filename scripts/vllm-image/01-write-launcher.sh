#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# vllm-image, step "launcher": write $HALOFORGE_STATE_DIR/vllm-image/start-vllm.sh, a
# launcher with the pinned image, the GPU devices, host IPC and the unified-memory advice.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

require_env VLLM_IMAGE VLLM_PORT
[[ "$VLLM_PORT" =~ ^[0-9]+$ ]] || die "VLLM_PORT must be a port number, got '$VLLM_PORT'"
dir=$(state_dir_for vllm-image)
launcher=$dir/start-vllm.sh
body=$HF_SCRIPT_DIR/launcher-body.sh
require_file "$body" "launcher template"

log_step "Write $launcher"
if is_dry_run; then
  printf '[dry-run] write %s: launcher-body.sh with LAUNCH_IMAGE=%s LAUNCH_PORT=%s LAUNCH_ENGINE=%s\n' \
    "$launcher" "$VLLM_IMAGE" "$VLLM_PORT" "$(engine)"
  exit 0
fi
{
  printf '#!/usr/bin/env bash\n'
  printf '# Written by haloforge (vllm-image track) on %s; re-run the step to refresh it.\n' "$(date -u +%Y-%m-%dT%H:%MZ)"
  printf 'LAUNCH_IMAGE=%q\n' "$VLLM_IMAGE"
  printf 'LAUNCH_PORT=%q\n' "$VLLM_PORT"
  printf 'LAUNCH_ENGINE=%q\n' "$(engine)"
  cat "$body"
} | write_file "$launcher"
chmod 0755 "$launcher"
bash -n "$launcher" || die "the written launcher does not parse: $launcher"
log_ok "launcher: $launcher <model> [vllm serve options]"
