# shellcheck shell=bash
# Pinned pip installs (sourced by common.sh).
#
# Every Python package a step installs by name has an exact version: a versions.env pin
# (ROCm, torch) or a line of python-pins.txt (build tools). Build requirements read from an
# upstream pyproject.toml at build time (build_requires.py) are held to python-pins.txt too,
# so a rebuild gets the same tools, and a requirement upstream adds later is named, not
# silently floated. PyPI is pip's default index: nothing here names another.

# The pins file; tests point it at their own local versions.
: "${HF_PYTHON_PINS:=$HF_LIB_DIR/python-pins.txt}"

# python_pin NAME: print NAME's line (NAME==VERSION) of python-pins.txt; fails when NAME has
# none (PEP 503 names: setuptools_scm and setuptools-scm are the same).
python_pin() {
  local want line
  want=$(_hf_pep503 "$1")
  while IFS= read -r line || [[ -n "$line" ]]; do
    line=${line%%#*}
    line=${line//[[:space:]]/}
    [[ "$line" == *==* ]] || continue
    if [[ "$(_hf_pep503 "${line%%==*}")" == "$want" ]]; then
      printf '%s\n' "$line"
      return 0
    fi
  done <"$HF_PYTHON_PINS"
  log_error "$1 has no pin in $HF_PYTHON_PINS"
  return 1
}

_hf_pep503() {
  local n=${1,,}
  n=${n//_/-}
  n=${n//./-}
  printf '%s\n' "$n"
}

# pip_install_pinned PY NAME...: install each NAME at its python-pins.txt version into the
# interpreter PY's environment (the venv's pip, setuptools, wheel, …).
pip_install_pinned() {
  local py=$1 name spec
  shift
  local -a specs=()
  for name in "$@"; do
    spec=$(python_pin "$name") || die "cannot install $name unpinned: add $name==<version> to $HF_PYTHON_PINS"
    specs+=("$spec")
  done
  pip_install_recorded "$py" --constraint "$HF_PYTHON_PINS" "${specs[@]}"
}

# pip_install_recorded PY ARGS...: PY -m pip install ARGS (retried), with what it installed
# recorded as facts: the wheel files, their URLs and sha256 (--report, hf_fact_pip_report).
pip_install_recorded() {
  local py=$1 report rc=0
  shift
  if ! pip_has_report "$py"; then
    log_warn "$py's pip is older than 22.2 (no --report): what it installs is not recorded"
    retry -n 2 -d 10 -- "$py" -m pip install "$@"
    return
  fi
  report=$(hf_pip_report)
  retry -n 2 -d 10 -- "$py" -m pip install "$@" --report "$report" || rc=$?
  if ((rc != 0)); then
    is_dry_run || rm -f -- "$report"
    return "$rc"
  fi
  hf_fact_pip_report "$report"
}

# pip_has_report PY: true when PY's pip takes --report (pip >= 22.2; a fresh venv of an old
# distro Python, 3.10's ensurepip, has pip 22.0). Asked once per interpreter.
pip_has_report() {
  local py=$1
  is_dry_run && return 0
  [[ "${_HF_PIP_REPORT_OK:-}" == *"|$py|"* ]] && return 0
  "$py" -m pip help install 2>/dev/null | grep -q -- '--report' || return 1
  _HF_PIP_REPORT_OK+="|$py|"
}

# install_build_requires PY SRC [EXCLUDE...]: before `pip wheel --no-build-isolation`, install
# into PY's environment what SRC's pyproject.toml lists in [build-system] requires (PEP 518;
# setuptools and wheel when it has none), read now from the checked-out tree, each name held
# to python-pins.txt. EXCLUDE names what the venv or the distro already provides (torch,
# cmake). A requirement with no pin, or one its pin does not satisfy, stops here with the
# line to add; HALOFORGE_ALLOW_UNPINNED=1 installs it anyway, with a warning.
install_build_requires() {
  local py=$1 src=$2 name out
  shift 2
  local -a args=(--pins "$HF_PYTHON_PINS") reqs=()
  for name in "$@"; do
    args+=(--exclude "$name")
  done
  if [[ "${HALOFORGE_ALLOW_UNPINNED:-0}" == 1 ]]; then
    args+=(--allow-unpinned)
  fi
  if is_dry_run && [[ ! -d "$src" || ! -x "$py" ]]; then
    log_info "[dry-run] build requirements: [build-system] requires of $src/pyproject.toml, read after the checkout (setuptools and wheel when it has none)${*:+, leaving out $*}, each held to $HF_PYTHON_PINS"
    run "$py" -m pip install --constraint "$HF_PYTHON_PINS" "<[build-system] requires of $src>"
    return 0
  fi
  out=$("$py" "$HF_LIB_DIR/build_requires.py" "$src" "${args[@]}") \
    || die "the build requirements of $src are not usable as pinned (the reason is above); fix $HF_PYTHON_PINS, or set HALOFORGE_ALLOW_UNPINNED=1 to let them float"
  [[ -n "$out" ]] && mapfile -t reqs <<<"$out"
  if ((${#reqs[@]} == 0)); then
    log_ok "$src needs no build requirements beyond what is installed"
    return 0
  fi
  log_info "build requirements of $src: ${reqs[*]}"
  pip_install_recorded "$py" --constraint "$HF_PYTHON_PINS" "${reqs[@]}"
}
