#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Integration test of the therock-toolbox track with real podman and distrobox (make integration).
#
# As root on a throwaway test machine (FACTS.md "Real podman + distrobox on these test
# machines"): installs podman, distrobox, runc, debootstrap, sudo and uidmap when missing;
# gives podman the ulimits and runc it needs in /etc/containers/containers.conf; builds a
# Debian base image with debootstrap + podman import (no registry is reachable; cached);
# creates the normal user haloforge-it with passwordless sudo; then, as that user:
#   1. haloforge build --track therock-toolbox --only toolbox,tools: a real box made by real
#      distrobox (--root, HALOFORGE_ALLOW_NO_GPU=1: no GPU here), and 01 run inside it for real;
#   2. the step scripts by hand: a second run reuses the box and the tools; a box from another
#      image is explained, not destroyed; a missing /dev/kfd is refused;
#   3. 02 against an unreachable index: fails in < 60 s, with the pip signature and the
#      wheel-index-unreachable family, and a complete log.
# The box is removed at the end; the base image stays cached.
#
# Environment: HALOFORGE_BIN (default bin/haloforge, else go build), HF_IT_KEEP=1 keeps the box.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

REPO=$(cd "$HF_LIB_DIR/../.." && pwd)
IT_USER=haloforge-it
IT_IMAGE=localhost/haloforge-it-bookworm:latest
IT_BOX=haloforge-it-box
IT_DIR=/var/tmp/haloforge-it
PYVER=3.11 # Debian bookworm's python (the pin's 3.12 is Ubuntu 24.04's)
START=$SECONDS
FAILS=0

# check NAME CONDITION...: one line per assertion; failures are counted, the run goes on.
check() {
  local name=$1
  shift
  if "$@"; then
    log_ok "$name"
  else
    log_error "FAILED: $name"
    FAILS=$((FAILS + 1))
  fi
}

contains() { grep -qF -- "$2" <<<"$1"; }

need_root() {
  [[ $(id -u) -eq 0 ]] || die "the integration test installs packages and creates a test user: run it as root (sudo make integration)"
}

install_packages() {
  local p missing=()
  for p in podman distrobox runc debootstrap sudo uidmap; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    run env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    log_ok "podman, distrobox, runc, debootstrap, sudo, uidmap installed"
  fi
}

# configure_podman: the ulimits and runc podman needs in this VM (FACTS.md), unless the file
# already has them; a different file is kept as .haloforge-bak.
configure_podman() {
  local conf=/etc/containers/containers.conf hard
  if [[ -f $conf ]] && grep -q '^default_ulimits' "$conf" && grep -q '^runtime *= *"runc"' "$conf"; then
    log_ok "$conf has the ulimits and runc"
    return 0
  fi
  [[ -f $conf ]] && cp "$conf" "$conf.haloforge-bak"
  hard=$(ulimit -Hn)
  mkdir -p /etc/containers
  printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=32768:32768"]\n\n[engine]\nruntime = "runc"\n' \
    "$hard" "$hard" | write_file "$conf"
}

# debian_mirror: the first Debian mirror apt uses here.
debian_mirror() {
  local m=''
  if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
    m=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
  fi
  if [[ -z $m && -r /etc/apt/sources.list ]]; then
    m=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' /etc/apt/sources.list)
  fi
  printf '%s\n' "${m:-http://deb.debian.org/debian}"
}

# base_image: a Debian bookworm image with what distrobox's first start would install
# (FACTS.md), built once and kept.
base_image() {
  if podman image exists "$IT_IMAGE"; then
    log_ok "base image $IT_IMAGE cached"
    return 0
  fi
  local root
  root=$(mktemp -d /var/tmp/haloforge-it-rootfs.XXXXXX)
  log_info "building $IT_IMAGE with debootstrap from $(debian_mirror) (log: /var/tmp/haloforge-it-debootstrap.log)"
  run debootstrap --variant=minbase \
    --include=sudo,passwd,diffutils,pinentry-curses,wget,curl,less,bc,time,lsof,procps,libcap2-bin,ca-certificates \
    bookworm "$root" "$(debian_mirror)" >/var/tmp/haloforge-it-debootstrap.log 2>&1 \
    || die "debootstrap failed, see /var/tmp/haloforge-it-debootstrap.log"
  # The box's apt must reach the same mirror as the host's.
  if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
    cp /etc/apt/sources.list.d/debian.sources "$root/etc/apt/sources.list.d/"
  elif [[ -r /etc/apt/sources.list ]]; then
    cp /etc/apt/sources.list "$root/etc/apt/sources.list"
  fi
  tar -C "$root" -c . | podman import - "$IT_IMAGE"
  rm -rf "$root"
}

make_user() {
  if ! id "$IT_USER" >/dev/null 2>&1; then
    run useradd --create-home --shell /bin/bash "$IT_USER"
  fi
  printf '%s ALL=(ALL) NOPASSWD: ALL\n' "$IT_USER" | write_file "/etc/sudoers.d/$IT_USER"
  chmod 0440 "/etc/sudoers.d/$IT_USER"
  # Rootless podman would need these; rootful (--root) does not, but distrobox checks them.
  grep -q "^$IT_USER:" /etc/subuid || usermod --add-subuids 200000-265535 --add-subgids 200000-265535 "$IT_USER"
}

# haloforge_bin: the binary under test, copied where the test user can run it.
haloforge_bin() {
  local bin=${HALOFORGE_BIN:-$REPO/bin/haloforge}
  mkdir -p "$IT_DIR"
  if [[ ! -x $bin ]]; then
    bin=$IT_DIR/haloforge.build
    (cd "$REPO" && go build -o "$bin" ./cmd/haloforge) || die "go build ./cmd/haloforge failed"
  fi
  install -m 0755 "$bin" "$IT_DIR/haloforge"
}

# as_user CMD...: run as the test user in its home, with the test options.
as_user() {
  sudo -u "$IT_USER" -H env -C "/home/$IT_USER" NO_COLOR=1 \
    HALOFORGE_ALLOW_NO_GPU="${IT_ALLOW_NO_GPU:-1}" HALOFORGE_DISTROBOX_ROOT=1 "$@"
}

STATE=/home/$IT_USER/.local/state/haloforge
# --ignore-checks: the doctor checks gpu and kfd-access block this track, and there is no GPU here.
BUILD=("$IT_DIR/haloforge" build --track therock-toolbox --plain --ignore-checks --scripts "$REPO/scripts"
  --pins "$REPO/versions.env" --state-dir "$STATE"
  --set "TOOLBOX_IMAGE=$IT_IMAGE" --set "TOOLBOX_NAME=$IT_BOX" --set "PYTHON_VERSION=$PYVER")

# step SCRIPT [VAR=VALUE...]: one step script by hand, as the test user.
step() {
  local script=$1
  shift
  as_user "TOOLBOX_IMAGE=$IT_IMAGE" "TOOLBOX_NAME=$IT_BOX" "PYTHON_VERSION=$PYVER" \
    "HALOFORGE_STATE_DIR=$STATE" "$@" bash "$REPO/scripts/therock-toolbox/$script"
}

remove_box() {
  as_user distrobox rm --root --force "$IT_BOX" >/dev/null 2>&1 || true
}

phase_build_tools() {
  log_step "haloforge build --only toolbox,tools (real distrobox, no GPU)"
  local out code=0 t0=$SECONDS
  out=$(as_user "${BUILD[@]}" --only toolbox,tools 2>&1) || code=$?
  printf '%s\n' "$out" | tail -n 40
  check "build toolbox,tools exits 0 (got $code, $((SECONDS - t0))s)" test "$code" -eq 0
  check "the box exists, created from $IT_IMAGE" \
    test "$(podman container inspect --format '{{.Config.Image}}' "$IT_BOX" 2>/dev/null)" = "$IT_IMAGE"
  check "00 said loudly that the box has no GPU devices" contains "$out" "WITHOUT --device /dev/kfd"
  check "01 checked the distro's cmake" contains "$out" "cmake: /usr/bin/cmake"
  local which_cmake venv_py
  which_cmake=$(as_user distrobox enter --root "$IT_BOX" -- which cmake 2>/dev/null | tr -d '\r')
  check "inside the box, which cmake is /usr/bin/cmake" test "$which_cmake" = /usr/bin/cmake
  venv_py=$(as_user distrobox enter --root "$IT_BOX" -- /opt/venv/bin/python --version 2>&1 | tr -d '\r')
  check "inside the box, /opt/venv has Python $PYVER ($venv_py)" contains "$venv_py" "Python $PYVER"
  local logs
  logs=$(find "$STATE/runs" -name 'tools.log' 2>/dev/null | head -n1)
  check "the tools step has a log under the state dir ($logs)" test -s "$logs"
}

phase_idempotent() {
  log_step "Step scripts by hand: re-runs are safe"
  local out code
  code=0 && out=$(step 00-setup-toolbox.sh 2>&1) || code=$?
  check "00 again: exit 0, the box is reused" contains "$code $out" "0 haloforge: therock-toolbox/00-setup-toolbox.sh"
  check "00 again says reused" contains "$out" "box $IT_BOX exists with image"
  code=0 && out=$(step 01-install-tools.sh 2>&1) || code=$?
  check "01 again: exit 0 ($code)" test "$code" -eq 0
  check "01 again installs nothing" contains "$out" "distro packages already installed"
  check "01 again keeps the venv" contains "$out" "venv /opt/venv exists (Python $PYVER): kept"

  code=0 && out=$(step 00-setup-toolbox.sh TOOLBOX_IMAGE=localhost/haloforge-it-other:1 2>&1) || code=$?
  check "00 with another image: refuses (exit $code)" test "$code" -eq 1
  check "00 with another image: gives the exact recreate command" contains "$out" "distrobox rm --root --force $IT_BOX"
  check "the box was not destroyed" podman container exists "$IT_BOX"

  code=0 && out=$(step 01-install-tools.sh TOOLBOX_NAME=haloforge-it-missing 2>&1) || code=$?
  check "01 without its box: refuses (exit $code)" test "$code" -eq 1
  check "01 without its box: says how to create it" contains "$out" "box haloforge-it-missing does not exist; create it first"

  code=0 && out=$(IT_ALLOW_NO_GPU=0 step 00-setup-toolbox.sh TOOLBOX_NAME=haloforge-it-nogpu 2>&1) || code=$?
  check "00 without /dev/kfd and without the test option: refuses (exit $code)" test "$code" -eq 1
  check "the refusal names /dev/kfd and the option" contains "$out" "/dev/kfd is missing"
  check "no box was created for it" bash -c "! podman container exists haloforge-it-nogpu"
}

phase_index_unreachable() {
  log_step "02 against an unreachable wheel index"
  local out code=0 t0=$SECONDS secs
  out=$(as_user "${BUILD[@]}" --only rocm --set 'THEROCK_INDEX_URL=https://127.0.0.1:9/rocm/whl-multi-arch/' 2>&1) || code=$?
  secs=$((SECONDS - t0))
  printf '%s\n' "$out" | tail -n 30
  check "build --only rocm fails as a failed step (exit $code, want 1)" test "$code" -eq 1
  check "it fails fast: ${secs}s < 60s" test "$secs" -lt 60
  check "the failure family is recognised: wheel-index-unreachable" contains "$out" "wheel-index-unreachable"
  local log
  log=$(find "$STATE/runs" -name 'rocm.log' -newermt "@$((EPOCHSECONDS - secs - 1))" 2>/dev/null | head -n1)
  check "the rocm step has a log ($log)" test -s "$log"
  [[ -s $log ]] || return 0
  local text
  text=$(<"$log")
  check "the log starts at the step's header" contains "$text" "haloforge: therock-toolbox/02-install-rocm.sh"
  check "the log has pip's own signature" contains "$text" "No matching distribution found"
  check "the log ends with the clear reason" contains "$(tail -n 3 "$log")" "cannot reach TheRock's wheel index https://127.0.0.1:9/rocm/whl-multi-arch/"
}

main() {
  need_root
  log_step "Setup (packages, podman config, base image, test user)"
  install_packages
  configure_podman
  base_image
  make_user
  haloforge_bin
  remove_box
  rm -rf "$STATE"

  phase_build_tools
  phase_idempotent
  phase_index_unreachable

  if [[ ${HF_IT_KEEP:-0} != 1 ]]; then
    remove_box
    check "the box is removed" bash -c "! podman container exists $IT_BOX"
  fi
  if ((FAILS)); then
    die "integration: $FAILS check(s) failed in $((SECONDS - START))s"
  fi
  log_ok "integration: every check passed in $((SECONDS - START))s"
}

# Sourcing it (for a phase by hand) defines the functions without running anything.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
