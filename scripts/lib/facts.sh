# shellcheck shell=bash
# What a build consumed (sourced by common.sh): the runner's facts protocol
# (steps/runner/facts.go). A pin names a tag, a ref, a version; a step that pulls, checks
# out or installs records what that resolved to today, one line per fact in
# $HALOFORGE_FACTS_FILE, which the runner checks and puts into report.json ("resolved"), and
# `haloforge pins lock RUN` turns into a versions.env that reproduces the build:
#   image<TAB>REF<TAB>sha256:…               hf_fact_image REF [ENGINE...]
#   wheel<TAB>NAME==VERSION<TAB>URL<TAB>SHA256  hf_fact_pip_report FILE (pip install --report FILE)
#   git<TAB>REPO<TAB>REF<TAB>COMMIT            hf_fact_git DIR REPO REF
# and one measurement, which the runner hands its consumers typed (StepFinished, report.json's
# times_ns), so nobody reads it back out of the log:
#   time<TAB>NAME<TAB>MILLISECONDS              hf_fact_time NAME MS
# A dry run resolves nothing and records nothing; run by hand (no HALOFORGE_FACTS_FILE) the
# facts are only logged.

# _hf_fact KIND FIELD...: append one fact line; a field that is empty or holds a tab or a
# line end would break the format, and is not recorded.
_hf_fact() {
  is_dry_run && return 0
  local field
  for field in "$@"; do
    if [[ -z "$field" || "$field" == *[$'\t\n\r']* ]]; then
      log_warn "not recorded (an empty field, or a tab or line end in one): $*"
      return 0
    fi
  done
  [[ -n "${HALOFORGE_FACTS_FILE:-}" ]] || return 0
  (
    IFS=$'\t'
    printf '%s\n' "$*"
  ) >>"$HALOFORGE_FACTS_FILE" || log_warn "cannot append to HALOFORGE_FACTS_FILE=$HALOFORGE_FACTS_FILE"
}

# hf_fact_image REF [ENGINE...]: record the digest the local image REF was pulled as (ENGINE:
# the podman or docker command line, by default box_manager's). An image built here, or not
# pulled, has no registry digest and is not recorded.
hf_fact_image() {
  local ref=$1 digest
  shift
  local -a eng=("$@")
  if ((${#eng[@]} == 0)); then
    read -r -a eng <<<"$(box_manager)"
  fi
  if is_dry_run; then
    log_info "[dry-run] would record the digest $ref was pulled as"
    return 0
  fi
  digest=$(_hf_image_digest "$ref" "${eng[@]}")
  if [[ ! "$digest" =~ ^sha256:[0-9a-f]{64}$ ]]; then
    log_warn "$ref has no registry digest here (built locally, or not pulled): not recorded"
    return 0
  fi
  log_ok "resolved: $ref is $digest"
  _hf_fact image "$ref" "$digest"
}

# _hf_image_digest REF ENGINE...: the digest of the local image REF: the one its name holds,
# else among its .RepoDigests the one of its own repository (podman's .Digest first, the
# digest it was pulled by), else podman's .Digest.
_hf_image_digest() {
  local ref=$1 own line d='' first=''
  shift
  if [[ "$ref" == *@sha256:* ]]; then
    printf '%s\n' "${ref##*@}"
    return 0
  fi
  own=$(_hf_norm_image "$ref")
  own=${own%:*}
  command -v "${1:-}" >/dev/null 2>&1 || [[ "${1:-}" == sudo ]] || return 0
  d=$("$@" image inspect --format '{{.Digest}}' "$ref" 2>/dev/null) || d=''
  while IFS= read -r line; do
    [[ "$line" == *@sha256:* ]] || continue
    [[ "$(_hf_norm_image "${line%@*}")" == "$own:latest" ]] || continue
    if [[ "${line##*@}" == "$d" ]]; then
      printf '%s\n' "$d"
      return 0
    fi
    [[ -n "$first" ]] || first=${line##*@}
  done < <("$@" image inspect --format '{{range .RepoDigests}}{{println .}}{{end}}' "$ref" 2>/dev/null || true)
  printf '%s\n' "${first:-$d}"
}

# hf_fact_git DIR REPO REF [REV]: record the commit DIR is checked out at (or the commit REV
# names there, e.g. the tag TheRock puts on the upstream commit before its hipify commit), for
# REPO at REF.
hf_fact_git() {
  local dir=$1 repo=$2 ref=$3 rev=${4:-HEAD} sha
  if is_dry_run; then
    return 0
  fi
  sha=$(git -C "$dir" rev-parse --verify --quiet "$rev^{commit}") || {
    log_warn "cannot read the commit of $dir: not recorded"
    return 0
  }
  log_ok "resolved: $repo $ref is $sha"
  _hf_fact git "$repo" "$ref" "$sha"
}

# hf_fact_remote REPO REF: record the commit REF (a tag or a branch) names on REPO now, for a
# checkout made where the script cannot look (inside a container build): git ls-remote, an
# annotated tag peeled to its commit.
hf_fact_remote() {
  local repo=$1 ref=$2 sha
  is_dry_run && return 0
  if [[ "$ref" =~ ^[0-9a-f]{40}$ ]]; then
    _hf_fact git "$repo" "$ref" "$ref"
    return 0
  fi
  sha=$(git ls-remote "$repo" "refs/tags/$ref^{}" "refs/tags/$ref" "refs/heads/$ref" 2>/dev/null | awk 'NR == 1 || /\^\{\}$/ { s = $1 } END { print s }') || sha=''
  if [[ ! "$sha" =~ ^[0-9a-f]{40}$ ]]; then
    log_warn "cannot resolve $repo $ref with git ls-remote: not recorded"
    return 0
  fi
  log_ok "resolved: $repo $ref is $sha"
  _hf_fact git "$repo" "$ref" "$sha"
}

# hf_fact_time NAME MS: record how long a part of the step's own work took (NAME: lower-case,
# e.g. engine: the benchmark command alone), in whole milliseconds; the log says it too.
hf_fact_time() {
  local name=$1 ms=$2
  if [[ ! $name =~ ^[a-z][a-z0-9-]{0,31}$ || ! $ms =~ ^[0-9]{1,12}$ ]]; then
    log_warn "not recorded: a time is NAME (lower-case) and whole milliseconds, got '$name' '$ms'"
    return 0
  fi
  log_info "haloforge: $name time $ms ms"
  _hf_fact time "$name" "$ms"
}

# hf_pip_report: a fresh path for pip's --report (pip >= 22.2; the format is stable since 23.0,
# pip's docs "Installation Report"), to give to hf_fact_pip_report after the install. A dry
# run names one and makes nothing.
hf_pip_report() {
  if is_dry_run; then
    printf '%s\n' "${TMPDIR:-/tmp}/hf-pip-report.json"
    return 0
  fi
  mktemp "${TMPDIR:-/tmp}/hf-pip-report.XXXXXX"
}

# hf_fact_pip_report FILE: record what pip installed, from its --report FILE: each archive
# (wheel or sdist) with the URL it came from and its sha256 (download_info, PEP 610
# archive_info), each VCS checkout with its commit; then remove FILE. A local source tree
# (dir_info) has no hash and is not recorded (its checkout is, with hf_fact_git).
hf_fact_pip_report() {
  local file=$1 line
  is_dry_run && return 0
  if [[ ! -s "$file" ]]; then
    rm -f -- "$file"
    return 0
  fi
  while IFS= read -r line; do
    # shellcheck disable=SC2086 # the fields are tab-separated on purpose
    (
      IFS=$'\t'
      set -f
      _hf_fact $line
    )
  done < <(
    python3 - "$file" <<-'PY'
		import json, sys, urllib.parse
		def clean(url):
		    u = urllib.parse.urlsplit(url)
		    if u.username or u.password:  # never a token into report.json
		        u = u._replace(netloc=u.hostname + (f":{u.port}" if u.port else ""))
		    return urllib.parse.urlunsplit(u)
		with open(sys.argv[1], encoding="utf-8") as f:
		    report = json.load(f)
		for item in report.get("install", []):
		    meta = item.get("metadata") or {}
		    name, version = meta.get("name"), meta.get("version")
		    info = item.get("download_info") or {}
		    url = info.get("url")
		    if not (name and version and url):
		        continue
		    archive, vcs = info.get("archive_info"), info.get("vcs_info")
		    fact = None
		    if archive is not None:
		        sha = (archive.get("hashes") or {}).get("sha256")
		        if not sha and str(archive.get("hash", "")).startswith("sha256="):
		            sha = archive["hash"][len("sha256="):]
		        if sha:
		            fact = ["wheel", f"{name}=={version}", clean(url), sha]
		    elif vcs is not None and vcs.get("commit_id"):
		        fact = ["git", clean(url), vcs.get("requested_revision") or "HEAD", vcs["commit_id"]]
		    # a field holding a tab or a line end would shift the others: not a fact
		    if fact and not any(c in str(f) for f in fact for c in "\t\r\n"):
		        print("\t".join(str(f) for f in fact))
	PY
  )
  rm -f -- "$file"
}

# ---- what a step created --------------------------------------------------------------
# The runner records what a step creates (steps/installed): `haloforge clean --track ID`
# removes it again, and only it. Ownership is set at creation: a box or an image haloforge
# makes carries the label io.haloforge.owner=$HALOFORGE_OWNER (hf_owner_flags), a directory
# a marker file .haloforge-owner holding it (hf_mkdir, hf_created_dir); a file is known by
# what it was when its step ended (hf_created_file), an image pulled by its ID. Something
# that was here before the step (a box, an image, a directory without the marker) is never
# recorded. Lines (facts file):
#   created<TAB>box<TAB>NAME<TAB>ENGINE
#   created<TAB>image<TAB>REF<TAB>ID<TAB>ENGINE<TAB>built|pulled<TAB>SIZE
#   created<TAB>dir|file<TAB>WHAT<TAB>PATH          WHAT: venv, cache, model, source, data
#   created<TAB>in-box<TAB>BOX<TAB>WHAT<TAB>PATH    a path only the box sees: it goes with the box

# hf_owner_flags: the flags that label a box or an image as this run's (one a line, for an
# array); nothing outside haloforge's runner.
hf_owner_flags() {
  [[ -n "${HALOFORGE_OWNER:-}" ]] || return 0
  printf '%s\n' --label "io.haloforge.owner=$HALOFORGE_OWNER"
}

# _hf_engine_word ENGINE...: the engine command line as the record names it (podman, docker,
# sudo-podman, sudo-docker).
_hf_engine_word() {
  if [[ "$1" == sudo ]]; then
    printf 'sudo-%s\n' "$(basename "${2:-}")"
  else
    basename "$1"
  fi
}

# hf_created_box NAME: record that this step created the box NAME (made with hf_owner_flags).
hf_created_box() {
  is_dry_run && return 0
  local -a mgr
  read -r -a mgr <<<"$(box_manager)"
  _hf_fact created box "$1" "$(_hf_engine_word "${mgr[@]}")"
  log_info "recorded: haloforge created box $1 (haloforge clean --track ${HALOFORGE_TRACK:-TRACK} removes it)"
}

# hf_created_image REF built|pulled [ENGINE...]: record that this step built REF (with
# hf_owner_flags) or pulled it (it was not here before); ENGINE defaults to box_manager's.
hf_created_image() {
  local ref=$1 how=$2 id size
  shift 2
  local -a eng=("$@")
  if ((${#eng[@]} == 0)); then
    read -r -a eng <<<"$(box_manager)"
  fi
  is_dry_run && return 0
  id=$("${eng[@]}" image inspect --format '{{.Id}}' "$ref" 2>/dev/null) || id=''
  if [[ ! "${id#sha256:}" =~ ^[0-9a-f]{64}$ ]]; then
    log_warn "cannot read the ID of $ref: not recorded as haloforge's"
    return 0
  fi
  size=$("${eng[@]}" image inspect --format '{{.Size}}' "$ref" 2>/dev/null) || size=''
  [[ "$size" =~ ^[0-9]+$ ]] || size=-
  _hf_fact created image "$ref" "${id#sha256:}" "$(_hf_engine_word "${eng[@]}")" "$how" "$size"
  log_info "recorded: haloforge $how image $ref (haloforge clean --track ${HALOFORGE_TRACK:-TRACK} removes it)"
}

# hf_mkdir WHAT DIR: make DIR (and its parents) for this step, marked and recorded as
# haloforge's. A DIR already there is used as it is, and recorded only when a haloforge run
# made it (its marker is there). WHAT: venv, cache, model, source, data.
hf_mkdir() {
  local what=$1 dir=$2
  if is_dry_run; then
    run mkdir -p "$dir"
    return 0
  fi
  if [[ -e "$dir" || -L "$dir" ]]; then
    if [[ -f "$dir/.haloforge-owner" && ! -L "$dir/.haloforge-owner" ]]; then
      _hf_record_path dir "$what" "$dir"
    fi
    return 0
  fi
  mkdir -p -- "$dir"
  hf_created_dir "$what" "$dir"
}

# hf_created_dir WHAT DIR: DIR is a directory this step just made (python -m venv, git
# clone): mark it and record it as haloforge's.
hf_created_dir() {
  local what=$1 dir=$2
  is_dry_run && return 0
  [[ -d "$dir" && ! -L "$dir" ]] || {
    log_warn "$dir is not a directory: not recorded"
    return 0
  }
  if [[ -n "${HALOFORGE_OWNER:-}" && ! -e "$dir/.haloforge-owner" ]]; then
    printf '%s\n' "$HALOFORGE_OWNER" >"$dir/.haloforge-owner"
  fi
  _hf_record_path dir "$what" "$dir"
}

# hf_created_file WHAT FILE: FILE is a file this step just wrote (a model): record it.
hf_created_file() {
  is_dry_run && return 0
  [[ -f "$2" && ! -L "$2" ]] || {
    log_warn "$2 is not a file: not recorded"
    return 0
  }
  _hf_record_path file "$1" "$2"
}

# _hf_record_path KIND WHAT PATH: the created line of a path, made absolute (links are not
# resolved: the runner refuses a path with one on the way). Inside the box, a path the host
# does not see (anything but home and /tmp) is the box's own.
_hf_record_path() {
  local kind=$1 what=$2 path
  path=$(realpath -s -m -- "$3")
  if in_box_now && [[ "$(box_path "$path")" != "$path" ]]; then
    _hf_fact created in-box "$TOOLBOX_NAME" "$what" "$path"
  else
    _hf_fact created "$kind" "$what" "$path"
  fi
}
