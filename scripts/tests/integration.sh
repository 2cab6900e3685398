#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Integration test of the therock-toolbox track with real podman and distrobox (make integration).
#
# As root on a throwaway test machine (a Debian 12 VM without registry access): installs podman, distrobox, runc, debootstrap, sudo, uidmap and python3 when missing;
# gives podman the ulimits and runc it needs in /etc/containers/containers.conf; builds a
# Debian base image with debootstrap + podman import (no registry is reachable; cached);
# creates the normal user haloforge-it with passwordless sudo; serves a PEP 503 index on
# 127.0.0.1 with real wheels of pip, setuptools, wheel and packaging (Debian trixie's
# python3-*-whl packages, cached) and pins those versions in a pins file of its own
# (HF_PYTHON_PINS), since PyPI is not reachable here; then, as that user, with pip's own
# PIP_INDEX_URL pointing at that index as a mirror user would have it:
#   1. haloforge build --track therock-toolbox --only toolbox,tools: a real box made by real
#      distrobox (--root, HALOFORGE_ALLOW_NO_GPU=1: no GPU here), and 01 run inside it for real;
#      pip inside the box fetched each tool from the index and the venv holds the pinned
#      versions (pip list);
#   2. the step scripts by hand: a second run reuses the box and the tools; a box from another
#      image is explained, not destroyed; a missing /dev/kfd is refused;
#   3. 02 against an unreachable index: fails in < 60 s, with the pip signature and the
#      wheel-index-unreachable family, and a complete log.
# The test user never reads the checkout (a clone in a 0700 directory, such as /root or what
# mktemp -d makes, works): it runs a copy of the binary from the test's own world-readable
# temp dir, with the scripts and pins built into it, and the hand-run steps use the scripts
# tree that binary wrote into the state dir. The box, the index server and the temp dir are
# removed at the end; the base image and the wheels stay cached.
#
# Environment: HALOFORGE_BIN (default bin/haloforge, else go build), HF_IT_KEEP=1 keeps the box.

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"

REPO=$(cd "$HF_LIB_DIR/../.." && pwd)
IT_USER=haloforge-it
IT_IMAGE=localhost/haloforge-it-bookworm:latest
IT_BOX=haloforge-it-box
PYVER=3.11 # Debian bookworm's python (the pin's 3.12 is Ubuntu 24.04's)
# The test's own files (binary, pins, index), world-readable, removed at the end; set in main.
IT_TMP=''
# Real wheels of the build tools 01 installs: Debian ships them as python3-*-whl; trixie's set
# (pip 25.1.1, setuptools 78.1.1, wheel 0.46.1, packaging 25.0) is one that installs together.
IT_WHEEL_SUITE=trixie
IT_WHEEL_DEBS=(python3-pip-whl python3-setuptools-whl python3-wheel-whl python3-packaging-whl)
IT_WHEEL_CACHE=/var/cache/haloforge-it/wheels
IT_INDEX_PID=''
IT_INDEX_URL=''
IT_PINS=''
IT_PIN_SPECS=()
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
  for p in podman distrobox runc debootstrap sudo uidmap python3; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    run env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  else
    log_ok "podman, distrobox, runc, debootstrap, sudo, uidmap, python3 installed"
  fi
}

# configure_podman: the ulimits and runc podman needs in this VM (else crun fails with
# "setrlimit RLIMIT_NOFILE: Operation not permitted" or "cgroups in hybrid mode not supported"), unless the file
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
# (so its first enter runs no apt), built once and kept.
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

# make_tmp: the test's own directory, readable by the test user whatever root's umask. It is
# under /var/tmp, not /tmp or the home: the box sees it as /run/host/var/tmp/…, so the pins
# file (HF_PYTHON_PINS) reaches 01 inside the box only through box.sh's hand-over of host paths.
make_tmp() {
  IT_TMP=$(mktemp -d /var/tmp/haloforge-it.XXXXXX)
  chmod 0755 "$IT_TMP"
}

# cleanup: stop the index server and remove the temp dir (on any exit).
cleanup() {
  if [[ -n $IT_INDEX_PID ]]; then
    kill "$IT_INDEX_PID" 2>/dev/null || true
    wait "$IT_INDEX_PID" 2>/dev/null || true
  fi
  if [[ -n $IT_TMP && -d $IT_TMP ]]; then
    rm -rf "$IT_TMP"
  fi
}

# haloforge_bin: the binary under test, copied where the test user can run it.
haloforge_bin() {
  local bin=${HALOFORGE_BIN:-$REPO/bin/haloforge}
  if [[ ! -x $bin ]]; then
    bin=$IT_TMP/haloforge.build
    (cd "$REPO" && go build -o "$bin" ./cmd/haloforge) || die "go build ./cmd/haloforge failed"
  fi
  install -m 0755 "$bin" "$IT_TMP/haloforge"
}

# fetch_wheels: the real wheels of IT_WHEEL_DEBS in IT_WHEEL_CACHE, downloaded with apt from
# the host's Debian mirror (a private apt state for IT_WHEEL_SUITE; the host's apt is not
# touched) unless cached.
fetch_wheels() {
  local name absent=0
  for name in pip setuptools wheel packaging; do
    compgen -G "$IT_WHEEL_CACHE/$name-*-py3-none-any.whl" >/dev/null || absent=1
  done
  if ((! absent)); then
    log_ok "wheels of pip, setuptools, wheel and packaging cached in $IT_WHEEL_CACHE"
    return 0
  fi
  local apt=$IT_TMP/apt deb
  mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/debs" "$apt/root"
  printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s %s main\n' \
    "$(debian_mirror)" "$IT_WHEEL_SUITE" >"$apt/sources.list"
  local -a opts=(-qq -o "Dir::Etc::sourcelist=$apt/sources.list" -o Dir::Etc::sourceparts=-
    -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt" -o Acquire::Languages=none
    -o APT::Sandbox::User=root)
  log_info "downloading ${IT_WHEEL_DEBS[*]} from $IT_WHEEL_SUITE ($(debian_mirror))"
  apt-get "${opts[@]}" update || die "apt-get update for $IT_WHEEL_SUITE failed"
  (cd "$apt/debs" && apt-get "${opts[@]}" download "${IT_WHEEL_DEBS[@]}") \
    || die "apt-get download ${IT_WHEEL_DEBS[*]} from $IT_WHEEL_SUITE failed"
  for deb in "$apt"/debs/*.deb; do
    dpkg-deb -x "$deb" "$apt/root"
  done
  rm -rf "$IT_WHEEL_CACHE"
  install -d -m 0755 "$IT_WHEEL_CACHE"
  install -m 0644 "$apt"/root/usr/share/python-wheels/*.whl "$IT_WHEEL_CACHE/"
  rm -rf "$apt"
}

# make_index: a PEP 503 simple index of the cached wheels under $IT_TMP/index (a page per
# project, each link with its sha256 and Requires-Python), and the pins file naming exactly
# their versions. A wheel that is not a valid zip with its METADATA stops the test.
make_index() {
  local out
  out=$(
    python3 - "$IT_WHEEL_CACHE" "$IT_TMP/index" <<'PY'
import email.parser, hashlib, html, os, re, shutil, sys, zipfile

src, root = sys.argv[1], sys.argv[2]
files, simple = os.path.join(root, "files"), os.path.join(root, "simple")
os.makedirs(files)
projects = {}
for name in sorted(os.listdir(src)):
    if not name.endswith(".whl"):
        continue
    path = os.path.join(src, name)
    with zipfile.ZipFile(path) as z:
        bad = z.testzip()
        if bad:
            sys.exit(f"{path}: corrupt member {bad}")
        meta = [n for n in z.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        if len(meta) != 1:
            sys.exit(f"{path}: no single top-level .dist-info/METADATA")
        msg = email.parser.Parser().parsestr(z.read(meta[0]).decode("utf-8"))
    project = re.sub(r"[-_.]+", "-", msg["Name"]).lower()
    with open(path, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    shutil.copyfile(path, os.path.join(files, name))
    projects[project] = (name, digest, msg.get("Requires-Python", ""))
    print(f"{project}=={msg['Version']}")
for project, (name, digest, requires) in projects.items():
    os.makedirs(os.path.join(simple, project))
    attr = f' data-requires-python="{html.escape(requires)}"' if requires else ""
    with open(os.path.join(simple, project, "index.html"), "w") as f:
        f.write(f'<!DOCTYPE html>\n<html><body>\n<a href="../../files/{name}#sha256={digest}"{attr}>{name}</a>\n</body></html>\n')
with open(os.path.join(simple, "index.html"), "w") as f:
    f.write("<!DOCTYPE html>\n<html><body>\n")
    f.writelines(f'<a href="{p}/">{p}</a>\n' for p in projects)
    f.write("</body></html>\n")
PY
  ) || die "cannot make the local index from $IT_WHEEL_CACHE (remove it to fetch the wheels again)"
  mapfile -t IT_PIN_SPECS <<<"$out"
  IT_PINS=$IT_TMP/python-pins.txt
  printf '%s\n' "# the versions the integration test's local index serves" "${IT_PIN_SPECS[@]}" \
    | install -m 0644 /dev/stdin "$IT_PINS"
  log_ok "local index of ${IT_PIN_SPECS[*]}; pins in $IT_PINS"
}

# start_index: serve $IT_TMP/index on a free port of 127.0.0.1 (the box shares the host's
# network); its access log is $IT_TMP/index.log.
start_index() {
  local log=$IT_TMP/index.log port='' i
  python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$IT_TMP/index" >"$log" 2>&1 &
  IT_INDEX_PID=$!
  for ((i = 0; i < 100; i++)); do
    port=$(sed -nE 's/^Serving HTTP on 127\.0\.0\.1 port ([0-9]+) .*/\1/p' "$log")
    [[ -n $port ]] && break
    kill -0 "$IT_INDEX_PID" 2>/dev/null || break
    sleep 0.1
  done
  [[ -n $port ]] || die "the local index server did not start: $(<"$log")"
  IT_INDEX_URL=http://127.0.0.1:$port/simple/
  log_ok "local index at $IT_INDEX_URL (pid $IT_INDEX_PID)"
}

# as_user CMD...: run as the test user in its home, with the test options and pip's own
# PIP_INDEX_URL at the local index (as a user behind a mirror sets it).
as_user() {
  sudo -u "$IT_USER" -H env -C "/home/$IT_USER" NO_COLOR=1 \
    HALOFORGE_ALLOW_NO_GPU="${IT_ALLOW_NO_GPU:-1}" HALOFORGE_DISTROBOX_ROOT=1 \
    PIP_INDEX_URL="$IT_INDEX_URL" HF_PYTHON_PINS="$IT_PINS" "$@"
}

STATE=/home/$IT_USER/.local/state/haloforge
# build ARGS...: haloforge build of the track as the test user, with the scripts and pins
# built into the binary (no --scripts, no --pins: nothing is read from the checkout).
# --ignore-checks: the doctor checks gpu and kfd-access block this track, and there is no GPU here.
build() {
  as_user "$IT_TMP/haloforge" build --track therock-toolbox --plain --ignore-checks --state-dir "$STATE" \
    --set "TOOLBOX_IMAGE=$IT_IMAGE" --set "TOOLBOX_NAME=$IT_BOX" --set "PYTHON_VERSION=$PYVER" "$@"
}

# The scripts and toolbox trees the binary wrote into the state dir (built_in_trees).
IT_SCRIPTS=''
IT_TOOLBOX=''

# built_in_trees: find the trees the first build wrote under $STATE/{scripts,toolbox}/<hash>/.
built_in_trees() {
  local -a dirs
  mapfile -t dirs < <(find "$STATE/scripts" -mindepth 1 -maxdepth 1 -type d 2>/dev/null)
  check "the build wrote the built-in scripts into the state dir (${dirs[*]})" test "${#dirs[@]}" -eq 1
  IT_SCRIPTS=${dirs[0]:-}
  mapfile -t dirs < <(find "$STATE/toolbox" -mindepth 1 -maxdepth 1 -type d 2>/dev/null)
  IT_TOOLBOX=${dirs[0]:-}
}

# step SCRIPT [VAR=VALUE...]: one step script by hand, as the test user, from the scripts
# tree the binary wrote.
step() {
  local script=$1
  shift
  as_user "TOOLBOX_IMAGE=$IT_IMAGE" "TOOLBOX_NAME=$IT_BOX" "PYTHON_VERSION=$PYVER" \
    "HALOFORGE_STATE_DIR=$STATE" "HALOFORGE_TOOLBOX_DIR=$IT_TOOLBOX" "$@" \
    bash "$IT_SCRIPTS/therock-toolbox/$script"
}

remove_box() {
  as_user distrobox rm --root --force "$IT_BOX" >/dev/null 2>&1 || true
}

phase_build_tools() {
  log_step "haloforge build --only toolbox,tools (real distrobox, no GPU)"
  local out code=0 t0=$SECONDS
  out=$(build --only toolbox,tools 2>&1) || code=$?
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
  # pip inside the box reached the host's 127.0.0.1 (the box shares the host's network)
  # through PIP_INDEX_URL, and the venv holds exactly the pinned versions.
  local spec freeze
  for spec in "${IT_PIN_SPECS[@]}"; do
    check "pip in the box asked the local index for ${spec%%==*}" grep -q "\"GET /simple/${spec%%==*}/ HTTP" "$IT_TMP/index.log"
  done
  freeze=$(as_user distrobox enter --root "$IT_BOX" -- /opt/venv/bin/python -m pip list --format=freeze 2>&1 | tr -d '\r')
  for spec in "${IT_PIN_SPECS[@]}"; do
    check "inside the box, pip list shows the pinned $spec" grep -qixF -- "$spec" <<<"$freeze"
  done
  built_in_trees
}

phase_idempotent() {
  log_step "Step scripts by hand: re-runs are safe"
  local out code
  if [[ -z $IT_SCRIPTS ]]; then
    check "the hand-run steps have a scripts tree" false
    return 0
  fi
  code=0 && out=$(step 00-setup-toolbox.sh 2>&1) || code=$?
  check "00 again: exit 0, the box is reused" contains "$code $out" "0 haloforge: therock-toolbox/00-setup-toolbox.sh"
  check "00 again says reused" contains "$out" "box $IT_BOX exists with image"
  code=0 && out=$(step 01-install-tools.sh 2>&1) || code=$?
  check "01 again: exit 0 ($code)" test "$code" -eq 0
  check "01 again installs nothing" contains "$out" "distro packages already installed"
  check "01 again keeps the venv" contains "$out" "venv /opt/venv exists (Python $PYVER): kept"
  check "01 again finds ${IT_PIN_SPECS[0]:-the pins} already installed" contains "$out" "Requirement already satisfied: ${IT_PIN_SPECS[0]:-?}"

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
  out=$(build --only rocm --set 'THEROCK_INDEX_URL=https://127.0.0.1:9/rocm/whl-multi-arch/' 2>&1) || code=$?
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
  log_step "Setup (packages, podman config, base image, test user, local index)"
  make_tmp
  trap cleanup EXIT
  install_packages
  configure_podman
  base_image
  make_user
  haloforge_bin
  fetch_wheels
  make_index
  start_index
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
