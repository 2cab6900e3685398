#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# vllm-image, step "pull": fetch AMD's prebuilt vLLM image at the pinned tag and record the
# digest it resolved to, so the tag can be swapped for a digest in versions.env.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=../lib/container.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/container.sh"
hf_init "$@"

require_env VLLM_IMAGE
log_step "Pull $VLLM_IMAGE"
case $VLLM_IMAGE in
  *rocm/vllm-dev:*)
    # vLLM deprecated rocm/vllm-dev for vllm/vllm-openai-rocm (scripts/SOURCES.md), and AMD
    # has not confirmed the navi tag; say so once, the pull may still work.
    log_warn "rocm/vllm-dev tags are deprecated upstream (vllm/vllm-openai-rocm replaces them) and AMD does not document this tag; if the pull fails, pin another image with --set VLLM_IMAGE=…"
    ;;
  *rocm/vllm[:@]*)
    # rocm/vllm is deprecated as well (scripts/SOURCES.md); the default stays on it because its
    # ROCm 10 image is the one verified on a Radeon 8060S, by this digest.
    log_warn "rocm/vllm is deprecated upstream (vllm/vllm-openai-rocm replaces it): this image is pinned by the digest verified on a Radeon 8060S and stays pullable while Docker Hub keeps it; haloforge pins status checks that it still resolves"
    ;;
esac
pull_image "$VLLM_IMAGE"

is_dry_run && exit 0
digest=$(image_digest "$VLLM_IMAGE")
dir=$(state_dir_for vllm-image)
printf '%s\n' "$VLLM_IMAGE" "$digest" | write_file "$dir/image.txt"
if [[ -n "$digest" ]]; then
  log_ok "$VLLM_IMAGE is $digest; pin it with VLLM_IMAGE=${VLLM_IMAGE%%:*}@$digest for a tag that cannot move"
fi
