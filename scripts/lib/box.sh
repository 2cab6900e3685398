# shellcheck shell=bash
# distrobox helpers (sourced by common.sh).
#
# HALOFORGE_DISTROBOX_ROOT=1 adds --root to every distrobox call: rootful podman through
# sudo from a normal user (distrobox itself refuses to run as root).
# A step that works inside the box calls enter_box "$@" after hf_init: on the host it re-runs
# the same script inside $TOOLBOX_NAME through distrobox enter, with the step's environment
# handed over in a file; inside the box (or in a dry run) it returns and the script goes on.

# distrobox_run SUBCOMMAND ARGS...: run (or print) distrobox SUBCOMMAND [--root] ARGS.
distrobox_run() {
  local sub=$1
  shift
  local flags=()
  [[ "${HALOFORGE_DISTROBOX_ROOT:-0}" == 1 ]] && flags=(--root)
  run distrobox "$sub" "${flags[@]}" "$@"
}

# in_box CMD...: run one command inside the box $TOOLBOX_NAME.
in_box() {
  distrobox_run enter "$TOOLBOX_NAME" -- "$@"
}

# box_manager: the container manager distrobox uses, as a command line (sudo for --root).
box_manager() {
  local mgr=${DBX_CONTAINER_MANAGER:-}
  if [[ -z "$mgr" || "$mgr" == autodetect ]]; then
    if command -v podman >/dev/null 2>&1; then mgr=podman; else mgr=docker; fi
  fi
  if [[ "${HALOFORGE_DISTROBOX_ROOT:-0}" == 1 && $(id -u) -ne 0 ]]; then
    printf 'sudo %s\n' "$mgr"
  else
    printf '%s\n' "$mgr"
  fi
}

# box_image NAME: the image a container was created from; fails when there is no such
# container. Read-only, so it also runs in a dry run.
box_image() {
  local -a mgr
  read -r -a mgr <<<"$(box_manager)"
  command -v "${mgr[-1]}" >/dev/null 2>&1 || return 1
  "${mgr[@]}" container inspect --format '{{.Config.Image}}' "$1" 2>/dev/null
}

# box_devices NAME: the host devices passed to the container (--device), space separated.
box_devices() {
  local -a mgr
  read -r -a mgr <<<"$(box_manager)"
  "${mgr[@]}" container inspect --format '{{range .HostConfig.Devices}}{{.PathOnHost}} {{end}}' "$1" 2>/dev/null
}

# box_exists NAME: true when the container exists.
box_exists() { box_image "$1" >/dev/null; }

# box_running NAME: true when the container is running (podman exec needs that). Read-only.
box_running() {
  local -a mgr
  read -r -a mgr <<<"$(box_manager)"
  [[ "$("${mgr[@]}" container inspect --format '{{.State.Running}}' "$1" 2>/dev/null)" == true ]]
}

# box_root_word: " --root" for a rootful box (HALOFORGE_DISTROBOX_ROOT=1), for the commands a
# message shows.
box_root_word() {
  if [[ "${HALOFORGE_DISTROBOX_ROOT:-0}" == 1 ]]; then
    printf ' --root'
  fi
}

# host_has_dev PATH: the host has the device PATH (/dev/kfd, /dev/dri). HALOFORGE_DEV_ROOT
# (tests) names a directory that stands in for the host's root in this check only; the
# flags still name the real path.
host_has_dev() {
  [[ -e "${HALOFORGE_DEV_ROOT:-}$1" ]]
}

# box_oci_runtime: podman's OCI runtime (crun, runc), empty when unknown or not podman.
# Read-only.
box_oci_runtime() {
  local -a mgr
  read -r -a mgr <<<"$(box_manager)"
  [[ "${mgr[-1]}" == podman ]] || return 0
  command -v podman >/dev/null 2>&1 || return 0
  "${mgr[@]}" info --format '{{.Host.OCIRuntime.Name}}' 2>/dev/null || true
}

# box_gpu_flags DEV...: sets BOX_FLAGS to what hands the host devices DEV (/dev/kfd, /dev/dri)
# to a distrobox box (docs/facts.md, container-engine), for `distrobox create --additional-flags`: a
# --device for each, the user's render and video groups, and seccomp unconfined when
# /dev/kfd (ROCm) is among them; empty without devices. distrobox already runs the box
# --privileged with /dev mounted and, under podman, the run.oci.keep_original_groups=1
# annotation (89luca89/distrobox 1.8.2.4 distrobox-create lines 676, 755, 935), so these are
# belt and braces. `--group-add keep-groups` is a podman (crun) keyword: docker resolves
# group names against the image's /etc/group and the box would never start ("Unable to find
# group keep-groups"), so a docker manager gets the numeric gids of the host's groups.
box_gpu_flags() {
  BOX_FLAGS=()
  (($#)) || return 0
  local dev kfd=0
  for dev in "$@"; do
    BOX_FLAGS+=(--device "$dev")
    [[ "$dev" == /dev/kfd ]] && kfd=1
  done
  local -a mgr
  read -r -a mgr <<<"$(box_manager)"
  if [[ "${mgr[-1]}" != podman ]]; then
    local g gid
    for g in video render; do
      gid=$(getent group "$g" 2>/dev/null | cut -d: -f3) || true
      [[ -n "$gid" ]] && BOX_FLAGS+=(--group-add "$gid")
    done
  else
    BOX_FLAGS+=(--group-add keep-groups)
    # keep-groups works through crun (podman troubleshooting, "Passed-in devices or files
    # can't be accessed in rootless container"); runc accepts the flag and ignores it, which
    # only matters rootless.
    local rt
    rt=$(box_oci_runtime)
    if [[ -n "$rt" && "$rt" != crun && "${HALOFORGE_DISTROBOX_ROOT:-0}" != 1 ]]; then
      log_warn "podman runs containers with $rt: --group-add keep-groups only takes effect with crun, so rootless access to the GPU may fail in the box (install crun, or use HALOFORGE_DISTROBOX_ROOT=1)"
    fi
  fi
  ((kfd)) && BOX_FLAGS+=(--security-opt seccomp=unconfined)
  return 0
}

# grant_box_sudo: a rootful box (HALOFORGE_DISTROBOX_ROOT=1) gives its user no passwordless
# sudo: distrobox-init sets one up only rootless, and makes a rootful user choose a password
# at the first interactive shell (89luca89/distrobox 1.8.2.4 distrobox-init lines 2338-2350,
# 2573-2590). The later steps run sudo unattended inside the box (apt/dnf, /opt), so the
# box's root grants it, through the container manager distrobox itself drives with sudo.
# Idempotent (the same file each time), so a re-run grants it to a box an older haloforge
# made; only the box $TOOLBOX_NAME is changed, and nothing happens rootless.
grant_box_sudo() {
  [[ "${HALOFORGE_DISTROBOX_ROOT:-0}" == 1 ]] || return 0
  local user
  local -a mgr
  user=$(id -un)
  read -r -a mgr <<<"$(box_manager)"
  # podman exec needs a running container; distrobox enter starts a stopped box.
  if ! is_dry_run && ! box_running "$TOOLBOX_NAME"; then
    in_box true
  fi
  log_info "rootful box: granting $user passwordless sudo inside $TOOLBOX_NAME (/etc/sudoers.d/haloforge)"
  run "${mgr[@]}" exec --user root "$TOOLBOX_NAME" sh -c \
    "printf '%s ALL=(root) NOPASSWD:ALL\\n' \"\$1\" > /etc/sudoers.d/haloforge && chmod 0440 /etc/sudoers.d/haloforge" sh "$user"
}

# require_box_tools: distrobox and a container manager it can drive (a dry run needs neither).
require_box_tools() {
  is_dry_run && return 0
  require distrobox
  command -v podman >/dev/null 2>&1 || command -v docker >/dev/null 2>&1 \
    || die "neither podman nor docker found; install podman ($(_hf_install_hint podman))"
}

# box_reuse_or_create IMAGE IMAGE_PIN NAME_PIN [FLAG...]: makes $TOOLBOX_NAME from IMAGE with
# the container flags FLAG... (box_gpu_flags' devices) and the run's owner label, recorded as
# haloforge's (with IMAGE when distrobox pulled it), or reuses it. Returns 0 when a box made from IMAGE already exists (reused;
# a rootful one gets its sudo grant), 1 after creating one (no box, or
# HALOFORGE_RECREATE_BOX=1 removed a box made from another image). A box from another image
# stops the step with the exact commands; IMAGE_PIN and NAME_PIN are the pins the user can
# set instead (the steps that make boxes share this, so they say the same thing).
box_reuse_or_create() {
  local want=$1 image_pin=$2 name_pin=$3 have
  shift 3
  if have=$(box_image "$TOOLBOX_NAME"); then
    if same_image "$have" "$want"; then
      log_ok "box $TOOLBOX_NAME exists with image $have: reused"
      # A rootful box made before haloforge granted sudo (or by hand) needs it too.
      grant_box_sudo
      return 0
    fi
    if is_dry_run; then
      log_warn "box $TOOLBOX_NAME was created from $have, not from the pinned $want: a real run stops here unless HALOFORGE_RECREATE_BOX=1, which does:"
      distrobox_run rm --force "$TOOLBOX_NAME"
    elif [[ "${HALOFORGE_RECREATE_BOX:-0}" == 1 ]]; then
      log_warn "box $TOOLBOX_NAME was created from $have, the pin says $want: HALOFORGE_RECREATE_BOX=1, removing it"
      distrobox_run rm --force "$TOOLBOX_NAME"
    else
      die "box $TOOLBOX_NAME exists but was created from $have, not from the pinned $want; replacing it means rebuilding everything inside it. To replace it: distrobox rm$(box_root_word) --force $TOOLBOX_NAME (or re-run with HALOFORGE_RECREATE_BOX=1); to keep it: --set $image_pin=$have, or pick another $name_pin"
    fi
  fi
  local -a create=(create --yes --name "$TOOLBOX_NAME" --image "$want") own mgr
  local had_image=0
  mapfile -t own < <(hf_owner_flags)
  local -a extra=("$@" "${own[@]}")
  if ((${#extra[@]})); then
    create+=(--additional-flags "${extra[*]}")
  fi
  read -r -a mgr <<<"$(box_manager)"
  if ! is_dry_run && "${mgr[@]}" image inspect "$want" >/dev/null 2>&1; then
    had_image=1
  fi
  distrobox_run "${create[@]}"
  hf_created_box "$TOOLBOX_NAME"
  # distrobox pulled the image when it was not here: haloforge's too.
  ((had_image)) || hf_created_image "$want" pulled "${mgr[@]}"
  return 1
}

# same_image A B: image references equal up to the implied docker.io/library/ prefix and
# :latest tag (podman records "ubuntu:24.04" as docker.io/library/ubuntu:24.04).
same_image() {
  [[ "$(_hf_norm_image "$1")" == "$(_hf_norm_image "$2")" ]]
}

_hf_norm_image() {
  local ref=$1 first
  first=${ref%%/*}
  if [[ "$ref" != */* ]]; then
    ref=docker.io/library/$ref
  elif [[ "$first" != *.* && "$first" != *:* && "$first" != localhost ]]; then
    ref=docker.io/$ref
  fi
  if [[ "${ref##*/}" != *:* && "$ref" != *@* ]]; then
    ref=$ref:latest
  fi
  printf '%s\n' "$ref"
}

# in_box_now: true inside the box: entered by enter_box, or by hand with distrobox enter
# (distrobox >= 1.4.2 sets CONTAINER_ID to the box's name, commit e8d98a2f; on 1.4.0/1.4.1
# podman's /run/.containerenv still names the container). A host that is itself a container
# is not the box.
in_box_now() {
  [[ -n "${HALOFORGE_IN_BOX:-}" || ("${CONTAINER_ID:-}" == "${TOOLBOX_NAME:-}" && -n "${CONTAINER_ID:-}") ]] && return 0
  [[ -n "${TOOLBOX_NAME:-}" && -r /run/.containerenv ]] && grep -qx "name=\"$TOOLBOX_NAME\"" /run/.containerenv
}

# box_path PATH: where a host path is seen inside a distrobox: home and /tmp are mounted at
# the same place, everything else under /run/host.
box_path() {
  local p=$1
  case $p in
    "${HOME:-/nonexistent}"/* | /tmp/*) printf '%s\n' "$p" ;;
    *) printf '/run/host%s\n' "$p" ;;
  esac
}

# The host's settings for reaching Python packages through a mirror or a proxy, handed over
# whole when exported: pip reads every PIP_<OPTION> (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL,
# PIP_FIND_LINKS, PIP_CERT, …; a list is whitespace separated), the *_proxy variables and
# REQUESTS_CA_BUNDLE / CURL_CA_BUNDLE; Python's ssl reads SSL_CERT_FILE / SSL_CERT_DIR;
# HF_PYTHON_PINS is pip.sh's pins file. distrobox forwards most of the environment itself but
# drops a value holding ", ` or $ (a proxy password) and, in Debian 12's 1.4.2, one holding a
# space (two extra indexes), so they go through the env file too.
_HF_PASS_ENV='^(PIP_[A-Z0-9_]+|HF_PYTHON_PINS|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|SSL_CERT_FILE|SSL_CERT_DIR|(http|https|ftp|all|no)_proxy|(HTTP|HTTPS|FTP|ALL|NO)_PROXY)$'
# Those whose values name files: each absolute path in them becomes the box's view of it.
_HF_PATH_ENV='^(PIP_[A-Z0-9_]+|HF_PYTHON_PINS|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|SSL_CERT_FILE|SSL_CERT_DIR)$'

# _hf_env_names: the variables a step hands over to its half inside the box: the runner's
# HALOFORGE_*, every pin, the toolbox build variables, a few build knobs and the exported
# package-access settings above.
_hf_env_names() {
  local names=()
  mapfile -t names < <(compgen -e | grep -E '^HALOFORGE_|'"$_HF_PASS_ENV" || true)
  mapfile -t -O "${#names[@]}" names < <(hf_pin_names)
  names+=(MAX_JOBS NO_COLOR TERM)
  printf '%s\n' "${names[@]}" | awk '!seen[$0]++'
}

# _hf_box_paths VALUE: VALUE with each whitespace-separated absolute path (or file:// URL)
# as the box sees it; a value naming no path comes back unchanged.
_hf_box_paths() {
  local word changed=0
  local -a words=() out=()
  read -r -d '' -a words <<<"$1" || true
  for word in "${words[@]}"; do
    case $word in
      /*) word=$(box_path "$word") changed=1 ;;
      file:///*) word=file://$(box_path "${word#file://}") changed=1 ;;
    esac
    out+=("$word")
  done
  if ((changed)); then
    printf '%s\n' "${out[*]}"
  else
    printf '%s\n' "$1"
  fi
}

# write_box_env FILE: the step's environment as export lines a shell can source; only the
# user can read it (a proxy URL may carry a password).
write_box_env() {
  local name
  (
    umask 077
    rm -f -- "$1"
    for name in $(_hf_env_names); do
      [[ "$name" == HALOFORGE_IN_BOX || "$name" == HALOFORGE_ENV_FILE ]] && continue
      [[ -n "${!name+set}" ]] || continue
      local value=${!name}
      # Host paths of the runner's contract (haloforge's binary too) and of the package
      # settings, as the box sees them.
      if [[ ("$name" =~ ^HALOFORGE_.*_(DIR|FILE)$ || "$name" == HALOFORGE_BIN) && "$value" == /* ]]; then
        value=$(box_path "$value")
      elif [[ "$name" =~ $_HF_PATH_ENV ]]; then
        value=$(_hf_box_paths "$value")
      fi
      printf 'export %s=%q\n' "$name" "$value"
    done >"$1"
  )
}

# enter_box ARGS...: make the rest of the script run inside the box (see the file header).
enter_box() {
  if in_box_now; then
    return 0
  fi
  require_env TOOLBOX_NAME
  local envfile=$HALOFORGE_RUN_DIR/$HALOFORGE_STEP.box-env
  local -a cmd
  cmd=(env HALOFORGE_IN_BOX=1 "HALOFORGE_ENV_FILE=$(box_path "$envfile")" bash "$(box_path "$HF_SCRIPT")" "$@")
  if is_dry_run; then
    box_exists "$TOOLBOX_NAME" \
      || log_info "(box $TOOLBOX_NAME does not exist yet: 00-setup-toolbox.sh creates it)"
    in_box "${cmd[@]}"
    log_info "inside the box, the step would run:"
    export HALOFORGE_IN_BOX=1
    return 0
  fi
  require distrobox
  box_exists "$TOOLBOX_NAME" \
    || die "box $TOOLBOX_NAME does not exist; create it first: haloforge build --track ${HALOFORGE_TRACK} --only toolbox (or ${HALOFORGE_SCRIPTS_DIR}/${HALOFORGE_TRACK}/00-setup-toolbox.sh)"
  mkdir -p "$HALOFORGE_RUN_DIR"
  write_box_env "$envfile"
  local code=0
  in_box "${cmd[@]}" || code=$?
  _HF_DYING=1
  exit "$code"
}

# load_box_env: inside the box, take over the environment the host half wrote.
load_box_env() {
  if [[ -n "${HALOFORGE_ENV_FILE:-}" && -r "$HALOFORGE_ENV_FILE" ]]; then
    # shellcheck disable=SC1090
    . "$HALOFORGE_ENV_FILE"
  fi
}
