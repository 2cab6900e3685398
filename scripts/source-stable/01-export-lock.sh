#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# source-stable, step "lock": copy the image's requirements.lock (pip freeze taken at the end
# of the build) and its resolved commits to $HALOFORGE_STATE_DIR/source-stable/, so a
# rebuild or another machine can reproduce exactly this Python environment.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
# shellcheck source=./lock.sh
. "$(dirname "${BASH_SOURCE[0]}")/lock.sh"
hf_init "$@"

require_env SOURCE_IMAGE
eng=$(engine)
dir=$(state_dir_for source-stable)
log_step "Export requirements.lock from $SOURCE_IMAGE"
if is_dry_run; then
  run "$eng" run --rm "$SOURCE_IMAGE" cat /opt/haloforge/requirements.lock
  run "$eng" run --rm "$SOURCE_IMAGE" cat /opt/haloforge/commits.txt
  exit 0
fi
image_present "$SOURCE_IMAGE" || die "$SOURCE_IMAGE does not exist: build it first (haloforge build --track source-stable --only image)"
lock=$("$eng" run --rm "$SOURCE_IMAGE" cat /opt/haloforge/requirements.lock)
check_lock "$lock"
printf '%s\n' "$lock" | write_file "$dir/requirements.lock"
"$eng" run --rm "$SOURCE_IMAGE" cat /opt/haloforge/commits.txt | write_file "$dir/commits.txt"
log_ok "$(wc -l <"$dir/requirements.lock") pinned packages in $dir/requirements.lock"
log_info "reproduce the environment: pip install --no-deps -r $dir/requirements.lock (torch from ${SOURCE_TORCH_INDEX_URL:-the PyTorch ROCm index})"
