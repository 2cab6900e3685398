# shellcheck shell=bash
# shellcheck source-path=SCRIPTDIR
# haloforge shared shell helpers for the step scripts.
#
# Source it first thing in a step script:
#   # shellcheck source=../lib/common.sh
#   . "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
#   hf_init "$@"
#
# What it gives a script:
#   strict mode (set -Eeuo pipefail) and an ERR trap naming the failing command and line;
#   logging: log_step, log_info, log_ok, log_warn, log_error, die;
#   run CMD... / run_in DIR CMD... / write_file PATH: print the command with its real values
#     and run it, or under HALOFORGE_DRY_RUN=1 print "[dry-run] ..." and change nothing;
#   require, require_env, require_file: fail early, saying what to install or set;
#   retry and url_reachable: bounded retries and a short probe for the network;
#   load_pins / load_toolbox_env_file / load_env_file: the pins and toolbox.env's build
#     variables: under the runner its environment (HALOFORGE_PIN_NAMES names them), by hand
#     read (never evaluated) from the checkout's files, the caller's environment first;
#   hf_init: the HALOFORGE_* variables of the runner's contract, defaulted for a run by hand;
#   as_root, mem_gib, max_jobs; cache_dir, cached_wheel, cache_prune (the wheel cache);
#   hf_verified, hf_not_verified, hf_run_checks, hf_verify_begin, hf_verify_end: what a verify
#     step proved (or could not), for the runner's report ($HALOFORGE_RESULT_FILE) and the log;
#   box.sh: distrobox_run, in_box, enter_box, box_image, same_image, box_path;
#   patch.sh: the fail-closed patchers patch_replace_once, patch_list_add,
#     patch_drop_requirements (applied / already present upstream / anchor not found);
#   pip.sh: pinned pip installs (python-pins.txt) and a tree's [build-system] requires;
#   facts.sh: hf_fact_image, hf_fact_git, hf_pip_report + hf_fact_pip_report: what a step
#     resolved (digests, commits, wheel files with sha256) for report.json and pins lock;
#     hf_owner_flags, hf_created_box, hf_created_image, hf_mkdir, hf_created_dir,
#     hf_created_file: what a step created, for the Installed list and haloforge clean.
#
# Environment it honours: HALOFORGE_DRY_RUN=1, HALOFORGE_PIN_NAMES (the runner's), by hand
# HALOFORGE_PINS_FILE and HALOFORGE_TOOLBOX_ENV_FILE, HALOFORGE_TOOLBOX_DIR, HALOFORGE_STATE_DIR,
# HALOFORGE_CACHE_DIR, HALOFORGE_CACHE_KEY, HALOFORGE_DISTROBOX_ROOT=1 (distrobox --root),
# HALOFORGE_RESULT_FILE (the runner's verify results), HALOFORGE_FACTS_FILE (what a step
# resolved and created), HALOFORGE_OWNER (the run's owner token), MAX_JOBS, NO_COLOR.

if [[ -n "${_HF_COMMON_LOADED:-}" ]]; then
  return 0
fi
_HF_COMMON_LOADED=1

set -Eeuo pipefail
shopt -s inherit_errexit 2>/dev/null || true

HF_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
_HF_SRC_DIR=$(dirname "${BASH_SOURCE[0]}")

# ---- logging ----------------------------------------------------------------

# Colour only on a terminal that wants it (NO_COLOR, TERM=dumb turn it off); the runner's
# pty is a terminal, and its logs keep colours.
if [[ -t 1 && -z "${NO_COLOR:-}" && "${TERM:-dumb}" != dumb ]]; then
  _HF_C_BOLD=$'\e[1m' _HF_C_RED=$'\e[31m' _HF_C_GREEN=$'\e[32m'
  _HF_C_YELLOW=$'\e[33m' _HF_C_BLUE=$'\e[34m' _HF_C_DIM=$'\e[2m' _HF_C_OFF=$'\e[0m'
else
  _HF_C_BOLD='' _HF_C_RED='' _HF_C_GREEN='' _HF_C_YELLOW='' _HF_C_BLUE='' _HF_C_DIM='' _HF_C_OFF=''
fi

# log_step TITLE: a section header, so a long log reads as a list of phases.
log_step() { printf '%s==> %s%s\n' "$_HF_C_BOLD$_HF_C_BLUE" "$*" "$_HF_C_OFF"; }
# log_info MSG: progress a user may want to read.
log_info() { printf '%s\n' "$*"; }
# log_ok MSG: a check or phase that succeeded.
log_ok() { printf '%sok:%s %s\n' "$_HF_C_GREEN" "$_HF_C_OFF" "$*"; }
# log_warn MSG: something degraded but not fatal (stderr).
log_warn() { printf '%swarning:%s %s\n' "$_HF_C_YELLOW" "$_HF_C_OFF" "$*" >&2; }
# log_error MSG: the reason a step stops (stderr).
log_error() { printf '%serror:%s %s\n' "$_HF_C_RED" "$_HF_C_OFF" "$*" >&2; }

# die MSG [CODE]: stop the step with a clear reason (default exit code 1).
die() {
  log_error "$1"
  _HF_DYING=1
  exit "${2:-1}"
}

# The ERR trap names the failing command, so a log that ends in a failure says where.
# It reports the innermost frame outside scripts/lib (the step's own line), and the command
# `run` was running when the failure came from inside a helper.
_hf_on_err() {
  local code=$1 cmd=$2 i n=${#BASH_SOURCE[@]} where=''
  [[ -n "${_HF_DYING:-}" ]] && return 0
  _HF_DYING=1
  for ((i = 1; i < n; i++)); do
    if [[ "${BASH_SOURCE[i]}" != "$HF_LIB_DIR"/* && "${BASH_SOURCE[i]}" != "$_HF_SRC_DIR"/* ]]; then
      where="${BASH_SOURCE[i]:-$0}"
      where="${where##*/}:${BASH_LINENO[i - 1]}"
      break
    fi
  done
  if ((i > 1)) && [[ -n "${_HF_LAST_CMD:-}" ]]; then
    cmd=$_HF_LAST_CMD
  fi
  log_error "command failed (exit $code) at ${where:-${0##*/}}: $cmd"
}
trap '_hf_on_err $? "$BASH_COMMAND"' ERR

# ---- dry run and run ----------------------------------------------------------

# is_dry_run: true under HALOFORGE_DRY_RUN=1 (haloforge build --dry-run).
is_dry_run() { [[ "${HALOFORGE_DRY_RUN:-0}" == 1 ]]; }

# quote_cmd ARGS...: one line, each argument shell-quoted only when it needs it, so the
# printed command can be pasted back into a shell.
quote_cmd() {
  local out='' arg q
  for arg in "$@"; do
    if [[ -n "$arg" && "$arg" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
      q=$arg
    else
      q=\'${arg//\'/\'\\\'\'}\'
    fi
    out+="${out:+ }$q"
  done
  printf '%s\n' "$out"
}

# run CMD ARGS...: print the command with its real values, then run it; under
# HALOFORGE_DRY_RUN=1 print it as "[dry-run] …" and run nothing.
# Environment for one command goes through env: run env A=1 cmd.
run() {
  if is_dry_run; then
    printf '%s[dry-run]%s %s\n' "$_HF_C_DIM" "$_HF_C_OFF" "$(quote_cmd "$@")"
    return 0
  fi
  _HF_LAST_CMD=$(quote_cmd "$@")
  printf '%s+%s %s\n' "$_HF_C_DIM" "$_HF_C_OFF" "$_HF_LAST_CMD"
  "$@"
}

# run_in DIR CMD ARGS...: run in a directory (printed as cd DIR && …); the directory need
# not exist in a dry run.
run_in() {
  local dir=$1
  shift
  if is_dry_run; then
    printf '%s[dry-run]%s cd %s && %s\n' "$_HF_C_DIM" "$_HF_C_OFF" "$(quote_cmd "$dir")" "$(quote_cmd "$@")"
    return 0
  fi
  _HF_LAST_CMD="cd $(quote_cmd "$dir") && $(quote_cmd "$@")"
  printf '%s+%s %s\n' "$_HF_C_DIM" "$_HF_C_OFF" "$_HF_LAST_CMD"
  (
    trap - ERR
    cd "$dir" && "$@"
  )
}

# write_file PATH: write stdin to PATH atomically (a temp file then mv); in a dry run, show
# what would be written.
write_file() {
  local dest=$1 tmp
  if is_dry_run; then
    printf '%s[dry-run]%s write %s:\n' "$_HF_C_DIM" "$_HF_C_OFF" "$dest"
    sed 's/^/    /'
    return 0
  fi
  mkdir -p "$(dirname "$dest")"
  tmp=$(mktemp "$dest.XXXXXX")
  cat >"$tmp"
  # mktemp makes 0600: keep the old file's mode, else the umask's usual one.
  if [[ -e "$dest" ]]; then
    chmod --reference="$dest" "$tmp"
  else
    chmod "$(printf '%o' $((0666 & ~$(umask))))" "$tmp"
  fi
  mv -f "$tmp" "$dest"
  log_info "wrote $dest"
}

# ---- what a verify step proved ------------------------------------------------------
# The runner exports HALOFORGE_RESULT_FILE to every step; a verify appends one line per
# outcome: "verified<TAB>what was proven" (a kernel ran, a token came out) or
# "not-verified<TAB>reason" (offline, no model). The runner shows them in the summary and
# report.json; a verify that proved nothing never ends with exit 0 and no not-verified line.

# hf_verified WHAT: record that this step proved WHAT.
hf_verified() { _hf_result verified "$*"; }

# hf_not_verified REASON: record what this step could not check, and why.
hf_not_verified() { _hf_result not-verified "$*"; }

_hf_result() {
  local kind=$1 text=$2
  # One line each: tabs and line ends would break the runner's format.
  text=${text//$'\t'/ }
  text=${text//$'\r'/ }
  text=${text//$'\n'/ }
  [[ -n "$text" ]] || text='(no detail given)'
  if [[ $kind == verified ]]; then
    printf '%sverified:%s %s\n' "$_HF_C_GREEN" "$_HF_C_OFF" "$text"
  else
    printf '%snot verified:%s %s\n' "$_HF_C_YELLOW" "$_HF_C_OFF" "$text"
  fi
  # A dry run proves nothing and records nothing.
  is_dry_run && return 0
  if [[ -n "${HALOFORGE_RESULT_FILE:-}" ]]; then
    printf '%s\t%s\n' "$kind" "$text" >>"$HALOFORGE_RESULT_FILE" \
      || log_warn "cannot append to HALOFORGE_RESULT_FILE=$HALOFORGE_RESULT_FILE"
  fi
  if [[ -n "${_HF_VERIFY_SEEN:-}" ]]; then
    printf '%s\n' "$kind" >>"$_HF_VERIFY_SEEN"
  fi
}

# hf_run_checks CMD...: run a check program (a python verify script, a container running
# one) with its output in the log; its lines "verified: WHAT" and "not-verified: REASON"
# become hf_verified / hf_not_verified. Returns the program's exit status.
hf_run_checks() {
  if is_dry_run; then
    run "$@"
    return 0
  fi
  local rc=0
  run "$@" 2>&1 | _hf_check_lines || rc=$?
  return "$rc"
}

_hf_check_lines() {
  local line
  while IFS= read -r line || [[ -n "$line" ]]; do
    case $line in
      'verified: '*) hf_verified "${line#verified: }" ;;
      'not-verified: '*) hf_not_verified "${line#not-verified: }" ;;
      *) printf '%s\n' "$line" ;;
    esac
  done
}

# hf_verify_begin: start counting this step's outcomes (call before the first check).
hf_verify_begin() {
  is_dry_run && return 0
  _HF_VERIFY_SEEN=$(mktemp "${TMPDIR:-/tmp}/hf-verify.XXXXXX")
  export _HF_VERIFY_SEEN
}

# hf_verify_end: a verify that recorded nothing proved nothing: say so as not verified.
hf_verify_end() {
  is_dry_run && return 0
  [[ -n "${_HF_VERIFY_SEEN:-}" ]] || return 0
  if [[ ! -s "$_HF_VERIFY_SEEN" ]]; then
    hf_not_verified "the verify step ran no check that proves the stack works"
  fi
  rm -f "$_HF_VERIFY_SEEN"
  _HF_VERIFY_SEEN=''
}

# ---- requirements -----------------------------------------------------------------

# require CMD...: each command must be on PATH; the error says which package has it.
require() {
  local cmd missing=()
  for cmd in "$@"; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
  done
  ((${#missing[@]} == 0)) && return 0
  die "missing command(s): ${missing[*]}; install them ($(_hf_install_hint "${missing[@]}")) and re-run"
}

_hf_install_hint() {
  if command -v apt-get >/dev/null 2>&1; then
    printf 'sudo apt-get install -y %s' "$*"
  elif command -v dnf >/dev/null 2>&1; then
    printf 'sudo dnf install -y %s' "$*"
  else
    printf 'with your package manager: %s' "$*"
  fi
}

# require_env NAME...: each variable must be set and non-empty (pins, paths).
require_env() {
  local name missing=()
  for name in "$@"; do
    [[ -n "${!name:-}" ]] || missing+=("$name")
  done
  ((${#missing[@]} == 0)) && return 0
  die "not set: ${missing[*]}; set them in versions.env or with haloforge build --set NAME=VALUE"
}

# require_file PATH [WHAT]: the file must exist.
require_file() {
  [[ -e "$1" ]] || die "${2:-file} not found: $1"
}

# ---- network -----------------------------------------------------------------------

# retry [-n ATTEMPTS] [-d DELAY] [--] CMD...: re-run a flaky network command with
# doubling delays (default 3 attempts, 2 s first delay). Not for deterministic failures.
retry() {
  local attempts=3 delay=2 i=1 code=0
  while (($#)); do
    case $1 in
      -n) attempts=$2 && shift 2 ;;
      -d) delay=$2 && shift 2 ;;
      --) shift && break ;;
      *) break ;;
    esac
  done
  # A helper function (as_root, in_box) prints its own command line; anything else goes
  # through run.
  local -a cmd=(run "$@")
  if [[ $(type -t "$1") == function ]]; then
    cmd=("$@")
  fi
  if is_dry_run; then
    "${cmd[@]}"
    return 0
  fi
  while :; do
    code=0
    "${cmd[@]}" || code=$?
    ((code == 0)) && return 0
    if ((i >= attempts)); then
      log_error "gave up after $attempts attempts (exit $code): $(quote_cmd "$@")"
      return "$code"
    fi
    log_warn "attempt $i/$attempts failed (exit $code); retrying in ${delay}s"
    sleep "$delay"
    i=$((i + 1)) delay=$((delay * 2))
  done
}

# url_reachable URL [SECONDS]: an HTTP(S) probe with a short timeout; read-only, so it runs
# in a dry run too. Succeeds on any HTTP answer below 500.
url_reachable() {
  local url=$1 secs=${2:-10} code
  if command -v curl >/dev/null 2>&1; then
    code=$(curl -sS -o /dev/null -w '%{http_code}' --max-time "$secs" --connect-timeout "$secs" -L "$url" 2>/dev/null) || return 1
    [[ "$code" =~ ^[1-4][0-9][0-9]$ ]]
  elif command -v python3 >/dev/null 2>&1; then
    python3 - "$url" "$secs" <<-'PY' >/dev/null 2>&1
			import sys, urllib.request, urllib.error
			try:
			    urllib.request.urlopen(sys.argv[1], timeout=float(sys.argv[2]))
			except urllib.error.HTTPError as e:
			    sys.exit(0 if e.code < 500 else 1)
		PY
  else
    return 2
  fi
}

# ---- pins and the runner's environment ------------------------------------------------
# Under haloforge's runner the pins reach a step by one channel: its environment. The runner
# validated the pins (versions.env, --set) and toolbox.env before the run and exported every
# value, naming them in HALOFORGE_PIN_NAMES; the step reads no pins file at all, so nothing
# written to one during a build reaches it. The run dir's pins.env and toolbox.env are the
# runner's record of those values, not read here. Run by hand, a step reads the checkout's
# versions.env (or HALOFORGE_PINS_FILE) and toolbox/toolbox.env with load_env_file, which
# assigns plain values and ${NAME} references and refuses every other shell construct,
# naming the file and line; `haloforge pins check FILE` validates the values.

# hf_by_runner: true when haloforge's runner started this step (it names the run; by hand the
# run is manual-…, or not named yet).
hf_by_runner() { [[ -n "${HALOFORGE_RUN_ID:-}" && "$HALOFORGE_RUN_ID" != manual-* ]]; }

# pins_file: the pins file a step run by hand reads: $HALOFORGE_PINS_FILE, else the
# checkout's versions.env next to the scripts tree (empty when neither exists, and always
# empty under the runner).
pins_file() {
  hf_by_runner && return 0
  if [[ -n "${HALOFORGE_PINS_FILE:-}" ]]; then
    printf '%s\n' "$HALOFORGE_PINS_FILE"
  elif [[ -f "$HF_LIB_DIR/../../versions.env" ]]; then
    printf '%s\n' "$(cd "$HF_LIB_DIR/../.." && pwd)/versions.env"
  fi
}

# toolbox_env_file: the build variables' file a step run by hand reads:
# $HALOFORGE_TOOLBOX_ENV_FILE, else $HALOFORGE_TOOLBOX_DIR/toolbox.env (the checkout's by
# default; never ./toolbox). Always empty under the runner.
toolbox_env_file() {
  hf_by_runner && return 0
  if [[ -n "${HALOFORGE_TOOLBOX_ENV_FILE:-}" ]]; then
    printf '%s\n' "$HALOFORGE_TOOLBOX_ENV_FILE"
  elif [[ -n "${HALOFORGE_TOOLBOX_DIR:-}" && -f "$HALOFORGE_TOOLBOX_DIR/toolbox.env" ]]; then
    printf '%s\n' "$HALOFORGE_TOOLBOX_DIR/toolbox.env"
  fi
}

# hf_pin_names: the names of the pins and build variables this step has: under the runner
# those it named in HALOFORGE_PIN_NAMES, by hand those the two files assign.
hf_pin_names() {
  local f
  local -a names=()
  if hf_by_runner; then
    read -r -a names <<<"${HALOFORGE_PIN_NAMES:-}"
    ((${#names[@]})) && printf '%s\n' "${names[@]}"
    return 0
  fi
  for f in "$(pins_file)" "$(toolbox_env_file)"; do
    [[ -n "$f" && -r "$f" ]] || continue
    sed -nE 's/^([A-Za-z_][A-Za-z0-9_]*)=.*/\1/p' "$f"
  done
}

# load_env_file FILE: assign each NAME=value line of a versions.env-style file that the
# environment does not already set, in file order, so ${REF}s see the caller's overrides
# (haloforge build --set ROCM_VERSION=… changes TORCH_VERSION's ${ROCM_VERSION} too).
# A value is made of plain words, '…' (literal), "…" (literal but for ${NAME}) and ${NAME};
# nothing is evaluated, and anything else stops the step with the file and line. Names are
# upper case, and never one that changes how programs run (PATH, LD_*, BASH_*, …).
load_env_file() {
  local file=$1 line name n=0 size
  [[ -f "$file" && -r "$file" ]] || die "cannot read $file (not a readable regular file)"
  size=$(wc -c <"$file")
  ((size <= 1048576)) || die "$file is $size bytes: not an env file (at most 1 MiB)"
  while IFS= read -r line || [[ -n "$line" ]]; do
    n=$((n + 1))
    line=${line%$'\r'}
    ((${#line} <= 4096)) || die "$file:$n: line longer than 4096 bytes: not an env file"
    [[ "$line" =~ ^[[:space:]]*(#|$) ]] && continue
    [[ "$line" =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] \
      || die "$file:$n: not a NAME=value line: $line (haloforge pins check $file says more)"
    name=${BASH_REMATCH[1]}
    _hf_env_value "${BASH_REMATCH[2]}" \
      || die "$file:$n: $name: $_HF_ENV_ERR (haloforge pins check $file says more)"
    if [[ ! "$name" =~ ^[A-Z][A-Z0-9_]*$ ]] || _hf_env_name_refused "$name"; then
      die "$file:$n: $name cannot be set from an env file"
    fi
    [[ -n "${!name+set}" ]] && continue
    printf -v "$name" '%s' "$_HF_ENV_VALUE"
    export "${name?}"
  done <"$file"
}

# _hf_env_name_refused NAME: names that change how the shell or every program runs.
_hf_env_name_refused() {
  case $1 in
    PATH | IFS | HOME | SHELL | ENV | CDPATH | GLOBIGNORE | SHELLOPTS | PS4 | PROMPT_COMMAND | TMPDIR) return 0 ;;
    PYTHONPATH | PYTHONHOME | PYTHONSTARTUP | LD_* | BASH* | HALOFORGE_* | _HF_*) return 0 ;;
  esac
  return 1
}

# _hf_env_value TEXT: the value TEXT stands for, in _HF_ENV_VALUE, or 1 with _HF_ENV_ERR.
_hf_env_value() {
  local rest=$1 out='' next
  _HF_ENV_ERR=''
  while [[ -n "$rest" ]]; do
    if [[ "$rest" =~ ^([A-Za-z0-9_./:@%+,=-]+)(.*)$ || "$rest" =~ ^\'([^\']*)\'(.*)$ ]]; then
      out+=${BASH_REMATCH[1]}
      rest=${BASH_REMATCH[2]}
    elif [[ "$rest" =~ ^\"([^\"]*)\"(.*)$ ]]; then
      next=${BASH_REMATCH[2]}
      _hf_env_refs "${BASH_REMATCH[1]}" || return 1
      out+=$_HF_ENV_VALUE
      rest=$next
    elif [[ "$rest" =~ ^\$\{([A-Za-z_][A-Za-z0-9_]*)\}(.*)$ ]]; then
      next=${BASH_REMATCH[2]}
      _hf_env_ref "${BASH_REMATCH[1]}" || return 1
      out+=$_HF_ENV_VALUE
      rest=$next
    elif [[ "$rest" =~ ^[[:space:]]+(#.*)?$ ]]; then
      break
    else
      _HF_ENV_ERR="only plain words, '…', \"…\" and \${NAME} are allowed; found: ${rest:0:40}"
      return 1
    fi
  done
  _HF_ENV_VALUE=$out
}

# _hf_env_refs TEXT: TEXT (inside "…") with its ${NAME}s expanded; any other $, ` or \ is refused.
_hf_env_refs() {
  local rest=$1 out=''
  while [[ -n "$rest" ]]; do
    if [[ "$rest" =~ ^([^\$\`\\]+)(.*)$ ]]; then
      out+=${BASH_REMATCH[1]}
      rest=${BASH_REMATCH[2]}
    elif [[ "$rest" =~ ^\$\{([A-Za-z_][A-Za-z0-9_]*)\}(.*)$ ]]; then
      rest=${BASH_REMATCH[2]}
      _hf_env_ref "${BASH_REMATCH[1]}" || return 1
      out+=$_HF_ENV_VALUE
    else
      _HF_ENV_ERR="inside \"…\" only \${NAME} may follow a \$, and \` and \\ are not allowed; found: ${rest:0:40}"
      return 1
    fi
  done
  _HF_ENV_VALUE=$out
}

# _hf_env_ref NAME: NAME's value in _HF_ENV_VALUE; it must be set (earlier in the file or in
# the environment).
_hf_env_ref() {
  if [[ -z "${!1+set}" ]]; then
    _HF_ENV_ERR="refers to \${$1}, which is not set (neither earlier in the file nor in the environment)"
    return 1
  fi
  _HF_ENV_VALUE=${!1}
}

# load_pins: every pin in the environment. Under the runner they are there already: an empty
# one is declared empty, and a name that is not a pin's stops the step. By hand, the pins
# file's values, the caller's (already exported) ones winning.
load_pins() {
  local file name
  local -a names=()
  if hf_by_runner; then
    [[ -n "${HALOFORGE_PIN_NAMES+set}" ]] \
      || die "haloforge's runner gave this step no pins (HALOFORGE_PIN_NAMES is not set): run it through haloforge build, or by hand without HALOFORGE_RUN_ID"
    read -r -a names <<<"$HALOFORGE_PIN_NAMES"
    for name in "${names[@]}"; do
      if [[ ! "$name" =~ ^[A-Z][A-Z0-9_]*$ ]] || _hf_env_name_refused "$name"; then
        die "HALOFORGE_PIN_NAMES names $name, which cannot be a pin"
      fi
      [[ -n "${!name+set}" ]] && continue
      printf -v "$name" '%s' ''
      export "${name?}"
    done
    return 0
  fi
  file=$(pins_file)
  if [[ -n "$file" ]]; then
    load_env_file "$file"
  fi
}

# load_toolbox_env_file: toolbox.env's build variables (WORK_DIR, VENV_DIR, the GPU targets);
# the pins and the caller's environment win. Under the runner they are in the environment
# already (load_pins), so nothing is read.
load_toolbox_env_file() {
  local file
  file=$(toolbox_env_file)
  [[ -n "$file" ]] || return 0
  load_env_file "$file"
}

# hf_init: strict setup every step script calls after sourcing: pins, the HALOFORGE_*
# defaults for a run by hand, and a header naming the step and the mode.
hf_init() {
  HF_SCRIPT="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
  HF_SCRIPT_NAME=$(basename "$0")
  HF_SCRIPT_DIR=$(dirname "$HF_SCRIPT")
  load_box_env
  load_pins
  local state=${XDG_STATE_HOME:-${HOME:-/tmp}/.local/state}/haloforge
  : "${HALOFORGE_STATE_DIR:=$state}"
  : "${HALOFORGE_TRACK:=$(basename "$HF_SCRIPT_DIR")}"
  : "${HALOFORGE_STEP:=${HF_SCRIPT_NAME%.sh}}"
  : "${HALOFORGE_RUN_ID:=manual-$(date -u +%Y%m%dT%H%M%SZ)}"
  : "${HALOFORGE_RUN_DIR:=$HALOFORGE_STATE_DIR/runs/$HALOFORGE_RUN_ID}"
  : "${HALOFORGE_CACHE_DIR:=$HALOFORGE_STATE_DIR/cache/$HALOFORGE_TRACK}"
  : "${HALOFORGE_SCRIPTS_DIR:=$(cd "$HF_LIB_DIR/.." && pwd)}"
  : "${HALOFORGE_TOOLBOX_DIR:=$(cd "$HF_LIB_DIR/../.." && pwd)/toolbox}"
  : "${HALOFORGE_CACHE_KEY:=manual}"
  export HALOFORGE_STATE_DIR HALOFORGE_TRACK HALOFORGE_STEP HALOFORGE_RUN_ID HALOFORGE_RUN_DIR \
    HALOFORGE_CACHE_DIR HALOFORGE_SCRIPTS_DIR HALOFORGE_TOOLBOX_DIR HALOFORGE_CACHE_KEY
  local where=''
  if [[ -n "${HALOFORGE_IN_BOX:-}" ]]; then
    where=" (inside box ${TOOLBOX_NAME:-?})"
  fi
  if is_dry_run; then
    log_info "haloforge: $HALOFORGE_TRACK/$HF_SCRIPT_NAME$where (dry run: commands are printed, nothing changes)"
  else
    log_info "haloforge: $HALOFORGE_TRACK/$HF_SCRIPT_NAME$where"
  fi
}

# ---- host helpers ---------------------------------------------------------------------

# as_root CMD...: run as root through sudo when not root already (inside a rootless box the
# user has passwordless sudo; 00-setup-toolbox.sh grants it in a rootful one). A sudo that
# would ask for a password stops the step with the fix instead of hanging unattended.
as_root() {
  if [[ $(id -u) -eq 0 ]]; then
    run "$@"
    return
  fi
  if ! is_dry_run && [[ -z "${_HF_SUDO_OK:-}" ]]; then
    sudo -n true 2>/dev/null \
      || die "sudo asks for a password here, and a step cannot answer it: in a rootful box (HALOFORGE_DISTROBOX_ROOT=1) re-run the toolbox step, which grants passwordless sudo, or enter the box once (distrobox enter --root ${TOOLBOX_NAME:-<box>}) and set a password, then run sudo -v before the build"
    _HF_SUDO_OK=1
  fi
  run sudo "$@"
}

# mem_gib: total RAM in whole GiB (from /proc/meminfo; HALOFORGE_MEM_GIB overrides for tests).
mem_gib() {
  if [[ -n "${HALOFORGE_MEM_GIB:-}" ]]; then
    printf '%s\n' "$HALOFORGE_MEM_GIB"
    return 0
  fi
  awk '/^MemTotal:/ { printf "%d\n", $2 / 1048576; exit }' /proc/meminfo
}

# max_jobs: parallel compile jobs bounded by RAM (about 4 GiB per HIP compiler) and by the
# CPUs; a MAX_JOBS already set wins.
max_jobs() {
  if [[ -n "${MAX_JOBS:-}" ]]; then
    printf '%s\n' "$MAX_JOBS"
    return 0
  fi
  local by_mem cpus
  by_mem=$(($(mem_gib) / 4))
  cpus=$(nproc 2>/dev/null || echo 1)
  ((by_mem < 1)) && by_mem=1
  ((by_mem > cpus)) && by_mem=$cpus
  printf '%s\n' "$by_mem"
}

# ---- cache ----------------------------------------------------------------------------

# cache_dir KIND: the per-step, per-key cache directory ($HALOFORGE_CACHE_DIR/KIND/<step>/<key>);
# a new key (pins or script changed) gets a fresh directory, an unchanged one reuses it.
cache_dir() {
  printf '%s/%s/%s/%s\n' "$HALOFORGE_CACHE_DIR" "$1" "$HALOFORGE_STEP" "$HALOFORGE_CACHE_KEY"
}

# cache_prune KIND [KEEP]: drop this step's cache directories of older keys, keeping the
# KEEP (default 2) most recent, so pin bumps do not pile up gigabytes of wheels.
cache_prune() {
  local base=$HALOFORGE_CACHE_DIR/$1/$HALOFORGE_STEP keep=${2:-2} d
  [[ -d "$base" ]] || return 0
  is_dry_run && return 0
  while IFS= read -r d; do
    [[ -n "$d" && "$d" != "$base/$HALOFORGE_CACHE_KEY" ]] || continue
    log_info "cache: removing $d (an older cache key)"
    rm -rf -- "$d"
  done < <(find "$base" -mindepth 1 -maxdepth 1 -type d -printf '%T@ %p\n' | sort -rn | cut -d' ' -f2- | tail -n +"$((keep + 1))")
}

# cached_wheel DIR GLOB: print the newest wheel in DIR matching GLOB; fail when none.
cached_wheel() {
  local dir=$1 glob=$2 f newest=''
  [[ -d "$dir" ]] || return 1
  for f in "$dir"/$glob; do
    [[ -f "$f" ]] || continue
    [[ -z "$newest" || "$f" -nt "$newest" ]] && newest=$f
  done
  [[ -n "$newest" ]] || return 1
  printf '%s\n' "$newest"
}

# shellcheck source=./box.sh
. "$HF_LIB_DIR/box.sh"
# shellcheck source=./patch.sh
. "$HF_LIB_DIR/patch.sh"
# shellcheck source=./pip.sh
. "$HF_LIB_DIR/pip.sh"
# shellcheck source=./facts.sh
. "$HF_LIB_DIR/facts.sh"
