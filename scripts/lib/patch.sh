# shellcheck shell=bash
# PATCH_RESULT is read by the scripts that call the patchers.
# shellcheck disable=SC2034
# Fail-closed patchers for upstream files (sourced by common.sh).
#
# Each patcher checks its anchor before it writes anything and reports exactly one of
#   patch NAME: applied (FILE)
#   patch NAME: already present upstream or from an earlier run (FILE)
#   patch NAME: anchor not found in FILE: ANCHOR      (error, returns 1, file untouched)
# and sets PATCH_RESULT to applied, present or missing. Line endings (LF or CRLF) are kept.
# Under HALOFORGE_DRY_RUN=1 nothing is written: a file that exists is checked and the
# result is reported as "would apply"; a file that does not exist yet is announced.

PATCH_RESULT=''

_hf_patch_dry() {
  local name=$1 file=$2
  if is_dry_run && [[ ! -e "$file" ]]; then
    printf '[dry-run] patch %s: %s (checked when the file exists)\n' "$name" "$file"
    PATCH_RESULT=dry-run
    return 0
  fi
  return 1
}

_hf_patch_write() {
  local file=$1 content=$2 tmp
  tmp=$(mktemp "$file.hfpatch.XXXXXX")
  printf '%s' "$content" >"$tmp"
  chmod --reference="$file" "$tmp" 2>/dev/null || true
  mv -f "$tmp" "$file"
}

# patch_replace_once NAME FILE OLD NEW: replace every occurrence of the fixed string OLD
# by NEW. Already present when NEW is there and OLD is not; anchor not found when neither.
patch_replace_once() {
  local name=$1 file=$2 old=$3 new=$4 content=''
  _hf_patch_dry "$name" "$file" && return 0
  if [[ ! -f "$file" ]]; then
    log_error "patch $name: anchor not found in $file: file does not exist"
    PATCH_RESULT=missing
    return 1
  fi
  IFS= read -r -d '' content <"$file" || true
  if [[ "$content" == *"$old"* ]]; then
    if is_dry_run; then
      printf '[dry-run] patch %s: would apply (%s)\n' "$name" "$file"
    else
      _hf_patch_write "$file" "${content//"$old"/"$new"}"
      printf 'patch %s: applied (%s)\n' "$name" "$file"
    fi
    PATCH_RESULT=applied
  elif [[ "$content" == *"$new"* ]]; then
    printf 'patch %s: already present upstream or from an earlier run (%s)\n' "$name" "$file"
    PATCH_RESULT=present
  else
    log_error "patch $name: anchor not found in $file: $old"
    PATCH_RESULT=missing
    return 1
  fi
}

# patch_list_add NAME FILE VAR ITEM: make ITEM part of the CMake list literal
# set(VAR "a;b;c") (every such line), inserted in target order (gfx1151 lands between
# gfx1101 and gfx1200). Already present when every such list has it.
patch_list_add() {
  local name=$1 file=$2 var=$3 item=$4 out code=0
  _hf_patch_dry "$name" "$file" && return 0
  if [[ ! -f "$file" ]]; then
    log_error "patch $name: anchor not found in $file: file does not exist"
    PATCH_RESULT=missing
    return 1
  fi
  out=$(mktemp "$file.hfpatch.XXXXXX")
  awk -v var="$var" -v item="$item" -f "$HF_LIB_DIR/list_add.awk" "$file" >"$out" || code=$?
  case $code in
    0)
      if is_dry_run; then
        rm -f "$out"
        printf '[dry-run] patch %s: would apply (%s)\n' "$name" "$file"
      else
        chmod --reference="$file" "$out" 2>/dev/null || true
        mv -f "$out" "$file"
        printf 'patch %s: applied (%s: %s added to %s)\n' "$name" "$file" "$item" "$var"
      fi
      PATCH_RESULT=applied
      ;;
    10)
      rm -f "$out"
      printf 'patch %s: already present upstream or from an earlier run (%s: %s is in %s)\n' "$name" "$file" "$item" "$var"
      PATCH_RESULT=present
      ;;
    *)
      rm -f "$out"
      log_error "patch $name: anchor not found in $file: set($var \"…\")"
      PATCH_RESULT=missing
      return 1
      ;;
  esac
}

# patch_drop_requirements NAME FILE PKG...: remove the lines of a pip requirements file that
# ask for PKG (any version, extras or markers; names compared the PEP 503 way). Reports
# "applied" with what went, or "already present upstream" when none of them is there.
patch_drop_requirements() {
  local name=$1 file=$2 out code=0
  shift 2
  _hf_patch_dry "$name" "$file" && return 0
  if [[ ! -f "$file" ]]; then
    log_error "patch $name: anchor not found in $file: file does not exist"
    PATCH_RESULT=missing
    return 1
  fi
  out=$(mktemp "$file.hfpatch.XXXXXX")
  awk -v pkgs="$*" '
		function norm(s) { s = tolower(s); gsub(/[-_.]+/, "-", s); return s }
		BEGIN { n = split(pkgs, p, " "); for (i = 1; i <= n; i++) drop[norm(p[i])] = 1 }
		{
			line = $0; sub(/\r$/, "", line)
			req = line; sub(/^[ \t]+/, "", req)
			if (match(req, /^[A-Za-z0-9][A-Za-z0-9._-]*/) && (norm(substr(req, 1, RLENGTH)) in drop)) {
				gone = gone (gone == "" ? "" : ", ") req; next
			}
			print
		}
		END { print gone > "/dev/stderr"; exit (gone == "" ? 10 : 0) }
	' "$file" >"$out" 2>"$out.gone" || code=$?
  local gone
  gone=$(<"$out.gone")
  rm -f "$out.gone"
  if ((code == 0)); then
    if is_dry_run; then
      rm -f "$out"
      printf '[dry-run] patch %s: would remove %s (%s)\n' "$name" "$gone" "$file"
    else
      chmod --reference="$file" "$out" 2>/dev/null || true
      mv -f "$out" "$file"
      printf 'patch %s: applied (%s: removed %s)\n' "$name" "$file" "$gone"
    fi
    PATCH_RESULT=applied
  elif ((code == 10)); then
    rm -f "$out"
    printf 'patch %s: already present upstream or from an earlier run (%s asks for none of: %s)\n' "$name" "$file" "$*"
    PATCH_RESULT=present
  else
    rm -f "$out"
    log_error "patch $name: could not read $file"
    PATCH_RESULT=missing
    return 1
  fi
}
