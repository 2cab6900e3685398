#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# llamacpp-distro step "packages": llama.cpp and one ggml GPU backend from the box's
# distribution, chosen from this machine. Runs inside the box (entered from the host).
#
# Pins: LLAMACPP_DISTRO_BACKEND = auto | vulkan | hip.
#   auto: HIP when /dev/kfd opens, the KFD topology names the GPU's target, and the
#         distribution's HIP backend carries code objects for that target; Vulkan otherwise
#         (the reason is printed and recorded). Debian sid's HIP backend (ROCm 6.4) has
#         code for gfx803 to gfx1102 but not gfx1151 on 2026-11-24, so Strix Halo gets Vulkan.
# Packages (scripts/SOURCES.md, llamacpp-distro block):
#   Debian sid / Ubuntu 26.04: llama.cpp-tools (llama-server, llama-bench, llama-cli),
#     llama.cpp-tools-extra (ggml-rpc-server), libggml0-backend-vulkan + mesa-vulkan-drivers,
#     or libggml0-backend-hip + rocminfo; python3-gguf + python3-numpy for the tiny model.
#   Fedora: llama-cpp (backends included), mesa-vulkan-drivers, rocminfo; python3-gguf
#     when the release has it.
# Writes $HALOFORGE_STATE_DIR/llamacpp-distro/backend (backend=, gfx=, reason=), which the
# verify step and haloforge serve read. Idempotent: installed packages are not reinstalled.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hf_init "$@"
distro_init
enter_box "$@"

want=${LLAMACPP_DISTRO_BACKEND:-auto}
case $want in
  auto | vulkan | hip) ;;
  *) die "LLAMACPP_DISTRO_BACKEND=$want: want auto, vulkan or hip" 2 ;;
esac

# distro: sets MGR (apt or dnf).
distro() {
  if command -v apt-get >/dev/null 2>&1; then
    MGR=apt
  elif command -v dnf >/dev/null 2>&1; then
    MGR=dnf
  else
    die "no apt-get or dnf in the box: use a Debian sid, Ubuntu 26.04 or Fedora image (LLAMACPP_DISTRO_IMAGE)"
  fi
}

# packages_for KIND: the package names of KIND (common, vulkan, hip, model) for $MGR.
packages_for() {
  case $MGR:$1 in
    apt:common) printf '%s\n' llama.cpp-tools llama.cpp-tools-extra ;;
    apt:vulkan) printf '%s\n' libggml0-backend-vulkan mesa-vulkan-drivers ;;
    apt:hip) printf '%s\n' libggml0-backend-hip rocminfo ;;
    apt:model) printf '%s\n' python3-gguf python3-numpy ;;
    dnf:common) printf '%s\n' llama-cpp ;;
    dnf:vulkan) printf '%s\n' mesa-vulkan-drivers ;;
    dnf:hip) printf '%s\n' rocminfo ;;
    dnf:model) printf '%s\n' python3-gguf python3-numpy ;;
  esac
}

installed() {
  if [[ $MGR == apt ]]; then
    dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
  else
    rpm -q "$1" >/dev/null 2>&1
  fi
}

APT_UPDATED=0
# install KIND...: install the packages of each KIND that are missing; 0 when all are there.
install() {
  local kind p missing=()
  for kind in "$@"; do
    while IFS= read -r p; do
      if is_dry_run || ! installed "$p"; then
        missing+=("$p")
      fi
    done < <(packages_for "$kind")
  done
  if ((${#missing[@]} == 0)); then
    log_ok "already installed: $(for kind in "$@"; do packages_for "$kind"; done | paste -sd' ')"
    return 0
  fi
  if [[ $MGR == apt ]]; then
    if ((APT_UPDATED == 0)); then
      retry -n 3 -d 5 -- as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
      APT_UPDATED=1
    fi
    retry -n 3 -d 5 -- as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    retry -n 3 -d 5 -- as_root dnf install -y "${missing[@]}"
  fi
}

# choose_backend: sets BACKEND, GFX and REASON.
choose_backend() {
  GFX=$(gpu_gfx_targets | head -n1)
  BACKEND=vulkan REASON=''
  if [[ $want == vulkan ]]; then
    REASON="LLAMACPP_DISTRO_BACKEND=vulkan"
    return 0
  fi
  if [[ ! -e /dev/kfd ]]; then
    REASON="no /dev/kfd in the box (amdgpu's KFD is not loaded, or the box was made without it)"
  elif [[ ! -r /dev/kfd || ! -w /dev/kfd ]]; then
    REASON="/dev/kfd is not readable and writable for $(id -un) (groups render, video)"
  elif [[ -z $GFX ]]; then
    REASON="the KFD topology lists no GPU"
  else
    BACKEND=hip
    REASON="/dev/kfd opens and the GPU is $GFX"
  fi
  if [[ $want == hip && $BACKEND != hip ]]; then
    is_dry_run || die "LLAMACPP_DISTRO_BACKEND=hip, but $REASON"
    log_warn "LLAMACPP_DISTRO_BACKEND=hip, but $REASON (a real run stops here)"
    BACKEND=hip
  fi
}

# check_hip_code: HIP only helps when the distribution built it for this GPU.
check_hip_code() {
  is_dry_run && return 0
  local dir lib targets
  dir=$(ggml_backend_dir) || die "no ggml backend directory found after installing the HIP backend"
  lib=$(compgen -G "$dir/libggml-hip.so*" | head -n1) || true
  [[ -n $lib ]] || die "the HIP backend library (libggml-hip.so) is not in $dir"
  if hip_backend_has "$lib" "$GFX"; then
    log_ok "$lib carries code for $GFX"
    return 0
  fi
  targets=$(hip_backend_targets "$lib")
  local why="the distribution's HIP backend $lib is built for ${targets:-no target it names}, not $GFX"
  [[ $want == hip ]] && die "LLAMACPP_DISTRO_BACKEND=hip, but $why (HSA_OVERRIDE_GFX_VERSION would run another GPU's code: use vulkan)"
  log_warn "$why: using Vulkan"
  BACKEND=vulkan REASON=$why
  # Both backends would see the same GPU; remove the HIP one again when this step added it.
  if [[ $MGR == apt && ${HIP_ADDED:-0} == 1 ]]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get remove -y -q libggml0-backend-hip
  fi
}

distro
# The choice comes first: a forced backend this machine cannot run stops before any install.
log_step "GPU backend (LLAMACPP_DISTRO_BACKEND=$want)"
choose_backend
log_info "candidate: $BACKEND ($REASON)"

log_step "llama.cpp from the distribution ($MGR)"
install common
# The tiny model is only needed without LLAMA_MODEL; a release without python3-gguf is no failure.
install model || log_warn "python3-gguf is not installable here: the verify step then needs LLAMA_MODEL"

if [[ $BACKEND == hip ]]; then
  HIP_ADDED=0
  installed libggml0-backend-hip || HIP_ADDED=1
  install hip
  check_hip_code
fi
if [[ $BACKEND == vulkan ]]; then
  install vulkan
fi

log_step "What is installed"
if ! is_dry_run; then
  for tool in llama-server llama-bench llama-cli; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is missing after the install (package $(packages_for common | head -n1))"
  done
  version=$(llama-bench --version 2>&1 | grep -m1 '^version' || true)
  log_ok "llama.cpp: ${version:-unknown version} ($(command -v llama-server))"
  rpc=$(compgen -G '/usr/libexec/*/llama/bin/ggml-rpc-server' | head -n1 || true)
  [[ -n $rpc ]] || rpc=$(command -v ggml-rpc-server 2>/dev/null || true)
  log_info "ggml-rpc-server: ${rpc:-not packaged here}"
  log_info "ggml backends: $(ggml_backend_dir 2>/dev/null || echo '?')"
fi
printf 'backend=%s\ngfx=%s\nreason=%s\n' "$BACKEND" "$GFX" "$REASON" | write_file "$(backend_file)"
log_ok "backend: $BACKEND ($REASON)"
