#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# vllm-image, step "pull": fetch the pinned vLLM image (AMD's rocm/vllm by default, or vLLM's
# own vllm/vllm-openai-rocm) and record the digest it resolved to, so a tag can be swapped for
# a digest (haloforge pins lock does it). Its entrypoint is shown: vllm/vllm-openai-rocm starts
# `vllm serve` itself (docker/Dockerfile.rocm, stage vllm-openai), rocm/vllm has none; the
# launcher and the verify set their own (--entrypoint), so both images run the same way.
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
    log_warn "rocm/vllm is deprecated upstream (vllm/vllm-openai-rocm replaces it): this image is pinned by the digest verified on a Radeon 8060S and stays pullable while Docker Hub keeps it; haloforge pins status checks that it still resolves; haloforge pins use vllm-openai-rocm switches to vLLM's own image"
    ;;
  *vllm/vllm-openai-rocm:*)
    [[ "$VLLM_IMAGE" == *@sha256:* ]] || log_info "vllm/vllm-openai-rocm is pinned by tag: the digest it resolves to is recorded now, and haloforge pins lock writes it into a lock file"
    ;;
esac
pull_image "$VLLM_IMAGE"

is_dry_run && exit 0
digest=$(image_digest "$VLLM_IMAGE")
entry=$("$(engine)" image inspect --format '{{json .Config.Entrypoint}}' "$VLLM_IMAGE" 2>/dev/null || true)
dir=$(state_dir_for vllm-image)
printf '%s\n' "$VLLM_IMAGE" "$digest" | write_file "$dir/image.txt"
log_info "image entrypoint: ${entry:-unknown} (the launcher and the verify set their own: --entrypoint vllm, --entrypoint python3)"
if [[ -n "$digest" ]]; then
  log_ok "$VLLM_IMAGE is $digest; pin it with VLLM_IMAGE=${VLLM_IMAGE%%[:@]*}@$digest for a tag that cannot move (haloforge pins lock)"
fi
