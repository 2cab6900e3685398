# shellcheck shell=bash
# check_lock TEXT: a pip freeze of this image must pin torch (a ROCm build) and vllm; an
# empty or partial freeze means the build did not finish what it claims.
check_lock() {
  local lock=$1 torch
  torch=$(grep -E '^torch==' <<<"$lock" || true)
  [[ -n "$torch" ]] || die "requirements.lock has no torch== line"
  [[ "$torch" == *+rocm* ]] || die "requirements.lock pins $torch, not a ROCm build"
  grep -qE '^vllm(==| @ )' <<<"$lock" || die "requirements.lock has no vllm line"
  grep -qE '^flash[_-]attn(==| @ )' <<<"$lock" || die "requirements.lock has no flash_attn line"
  if grep -qE '^cmake==' <<<"$lock"; then
    log_warn "requirements.lock contains pip's cmake: it can shadow the distro's (failure family pip-cmake-broken-shim)"
  fi
  return 0
}
