#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-toolbox step "tools": build tools from the box's distro and the Python venv.
# Runs inside the box (entered through distrobox from the host).
#
# Pins: PYTHON_VERSION. Build variables: VENV_DIR, WORK_DIR (toolbox/toolbox.env).
# cmake comes from apt/dnf, never from pip (the pip-cmake-broken-shim failure): `which cmake` must be /usr/bin/cmake.
# The venv is made by the distro's python with ensurepip (it then holds only pip); the build
# tools every later wheel build imports (pip, setuptools, wheel, packaging) go in at their
# scripts/lib/python-pins.txt versions from PyPI.
# Idempotent: installed packages are not reinstalled, an existing venv is kept.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
hf_init "$@"
enter_box "$@"
load_toolbox_env
require_env PYTHON_VERSION VENV_DIR WORK_DIR

py=python$PYTHON_VERSION

# distro_packages: sets MGR (apt or dnf) and PKGS for this distro.
distro_packages() {
  if command -v apt-get >/dev/null 2>&1; then
    MGR=apt
    PKGS=(git cmake ninja-build build-essential pkg-config ccache
      "$py" "$py-venv" "$py-dev" libnuma-dev curl ca-certificates)
  elif command -v dnf >/dev/null 2>&1; then
    MGR=dnf
    PKGS=(git cmake ninja-build gcc gcc-c++ make pkgconf-pkg-config ccache
      "$py" "$py-devel" numactl-devel curl ca-certificates)
  else
    die "no apt-get or dnf in the box: use an Ubuntu/Debian or Fedora image (TOOLBOX_IMAGE)"
  fi
}

# missing_packages MANAGER PKG...: the packages not installed yet.
missing_packages() {
  local mgr=$1 p
  shift
  for p in "$@"; do
    if [[ $mgr == apt ]]; then
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || printf '%s\n' "$p"
    else
      rpm -q --whatprovides "$p" >/dev/null 2>&1 || printf '%s\n' "$p"
    fi
  done
}

install_packages() {
  local mgr missing
  distro_packages
  mgr=$MGR
  local list=("${PKGS[@]}")
  if is_dry_run; then
    missing=("${list[@]}")
  else
    mapfile -t missing < <(missing_packages "$mgr" "${list[@]}")
  fi
  if ((${#missing[@]} == 0)); then
    log_ok "distro packages already installed: ${list[*]}"
    return 0
  fi
  log_info "installing: ${missing[*]}"
  if [[ $mgr == apt ]]; then
    retry -n 3 -d 5 -- as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
    # A python version the distro does not ship is a pin problem, not a network one.
    if ! is_dry_run && ! apt-cache show "$py" >/dev/null 2>&1; then
      die "$py is not available from this distro's apt sources; set PYTHON_VERSION to the box's python (e.g. --set PYTHON_VERSION=$(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo 3.12)) or use the Ubuntu 24.04 image"
    fi
    retry -n 3 -d 5 -- as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
  else
    retry -n 3 -d 5 -- as_root dnf install -y "${missing[@]}"
  fi
}

# check_cmake: the distro's cmake, not a pip shim.
check_cmake() {
  is_dry_run && {
    run which cmake
    return 0
  }
  local where
  where=$(command -v cmake) || die "cmake not found after installing it"
  [[ "$where" == /usr/bin/cmake ]] \
    || die "which cmake gives $where, not the distro's /usr/bin/cmake (a pip cmake shadows it): pip uninstall -y cmake"
  log_ok "cmake: $where ($(cmake --version | head -n1))"
}

make_venv() {
  if [[ -x "$VENV_DIR/bin/python" ]]; then
    local have
    have=$("$VENV_DIR/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
    [[ "$have" == "$PYTHON_VERSION" ]] \
      || die "the venv $VENV_DIR has Python $have, the pin PYTHON_VERSION is $PYTHON_VERSION: remove it (rm -rf $VENV_DIR) and re-run this step"
    log_ok "venv $VENV_DIR exists (Python $have): kept"
    # A venv baked into the image (toolbox/Containerfile.therock-*) belongs to root; the
    # box's user installs into it from now on.
    if [[ ! -w "$VENV_DIR" ]]; then
      as_root chown -R "$(id -u):$(id -g)" "$VENV_DIR"
    fi
  else
    owned_dir "$VENV_DIR"
    run "$py" -m venv "$VENV_DIR"
    hf_created_dir venv "$VENV_DIR"
  fi
  # A pip-installed cmake in the venv would shadow /usr/bin/cmake once the venv is active.
  if [[ -e "$VENV_DIR/bin/cmake" ]]; then
    run "$VENV_DIR/bin/python" -m pip uninstall -y cmake
  fi
}

log_step "Distro build tools"
install_packages
check_cmake
for tool in git ninja gcc g++ "$py"; do
  if is_dry_run; then
    continue
  fi
  command -v "$tool" >/dev/null 2>&1 || die "$tool missing after the install"
  log_ok "$tool: $("$tool" --version 2>&1 | head -n1)"
done

log_step "Python $PYTHON_VERSION venv at $VENV_DIR"
make_venv
PY=$VENV_DIR/bin/python
log_step "Pinned build tools in the venv (${VENV_BUILD_TOOLS[*]})"
venv_build_tools
owned_dir "$WORK_DIR"
if ! is_dry_run; then
  log_ok "venv ready: $("$VENV_DIR/bin/python" --version), pip $("$VENV_DIR/bin/python" -m pip --version | cut -d' ' -f2)"
fi
