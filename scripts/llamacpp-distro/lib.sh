# shellcheck shell=bash
# Helpers of the llamacpp-distro track (sourced after ../lib/common.sh and hf_init).
#
# The track's box is $LLAMACPP_DISTRO_BOX; box.sh's helpers (enter_box, in_box) work on
# $TOOLBOX_NAME, so distro_init points that at the track's box.
# The verify protocol (hf_verified/hf_not_verified, HALOFORGE_RESULT_FILE) is lib/common.sh's.

# distro_init: the box name for box.sh, the track's state directory.
distro_init() {
  require_env LLAMACPP_DISTRO_BOX
  TOOLBOX_NAME=$LLAMACPP_DISTRO_BOX
  DISTRO_STATE=$HALOFORGE_STATE_DIR/llamacpp-distro
  export TOOLBOX_NAME DISTRO_STATE
}

# gpu_gfx_targets: the LLVM targets of the GPUs the kernel's KFD topology lists (no ROCm
# user space needed): gfx_target_version major*10000+minor*100+stepping, named gfx +
# major (decimal) + minor and stepping (hex) (docs/facts.md, KFD topology). Nodes with
# simd_count 0 are CPUs. HALOFORGE_KFD_TOPOLOGY overrides the sysfs path (tests).
gpu_gfx_targets() {
  local topo=${HALOFORGE_KFD_TOPOLOGY:-/sys/class/kfd/kfd/topology/nodes} props
  for props in "$topo"/*/properties; do
    [[ -r "$props" ]] || continue
    awk '$1 == "simd_count" { simd = $2 } $1 == "gfx_target_version" { v = $2 }
      END { if (simd > 0 && v > 0) printf "gfx%d%x%x\n", int(v / 10000), int(v / 100) % 100, v % 100 }' "$props"
  done | awk '!seen[$0]++'
}

# hip_backend_has LIB GFX: the HIP backend library carries code objects for GFX (the
# clang offload bundle names each target as amdgcn-amd-amdhsa--gfxNNNN).
hip_backend_has() {
  local lib=$1 gfx=$2
  [[ -r "$lib" ]] || return 1
  grep -a -q -- "amdgcn-amd-amdhsa--$gfx" "$lib"
}

# hip_backend_targets LIB: the targets a HIP backend library was built for, one line.
hip_backend_targets() {
  grep -a -o -- 'amdgcn-amd-amdhsa--gfx[0-9a-z]*' "$1" 2>/dev/null | sed 's/.*--//' | sort -u | paste -sd' '
}

# ggml_backend_dir: where the distribution installs the ggml backends (Debian/Ubuntu:
# /usr/lib/<triplet>/ggml/backends0; Fedora keeps libggml-*.so in the lib directory).
ggml_backend_dir() {
  local d
  for d in /usr/lib/*-linux-gnu/ggml/backends0 /usr/lib64/ggml /usr/lib64; do
    if compgen -G "$d/libggml-*.so*" >/dev/null; then
      printf '%s\n' "$d"
      return 0
    fi
  done
  return 1
}

# backend_file: the file that records the backend the packages step chose.
backend_file() { printf '%s/backend\n' "$DISTRO_STATE"; }
