#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Proof of the release packages (make dist-test, as root; make dist has filled dist/):
#   - dist/checksums.txt verifies with sha256sum and names the archive, the .deb and the .rpm;
#   - the archive holds the binary, README.md, TUTORIAL.md, LICENSE, the completions and the
#     man page;
#   - the .rpm, read with Debian's rpm: name, version, MIT licence; podman and distrobox
#     recommended, neither required; its digests check; its payload has the binary in /usr/bin
#     (the archive's binary, byte for byte), the completions where bash, zsh (Fedora's path)
#     and fish look, the man page and the licence;
#   - the .deb: the same fields and the same binary (zsh in Debian's path); then installed with
#     `dpkg -i` in a fresh Debian sid container (sid-image.sh's base: no podman, no distrobox,
#     no network), where the installed haloforge --version names the commit make dist built,
#     doctor --json prints a doctor report (exit 0 or 1: this container has no GPU), demo
#     --plain plays to the end, the bash completion loads, and `dpkg -r` leaves none of its
#     files.
# Environment: HF_DIST (default <repo>/dist).

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# check, contains, need_root and configure_podman are the therock integration test's
# (sourcing it defines its functions and runs nothing).
# shellcheck source=./integration.sh
. "$(dirname "${BASH_SOURCE[0]}")/integration.sh"
# shellcheck source=./sid-image.sh
. "$(dirname "${BASH_SOURCE[0]}")/sid-image.sh"

REPO=$(cd "$HF_LIB_DIR/../.." && pwd)
DIST=${HF_DIST:-$REPO/dist}
START=$SECONDS
FAILS=0
OUT='' # the container's answers, one file each; removed at the end

# The files the packages install besides the binary, per format.
DEB_FILES=(/usr/bin/haloforge /usr/share/bash-completion/completions/haloforge
  /usr/share/zsh/vendor-completions/_haloforge /usr/share/fish/vendor_completions.d/haloforge.fish
  /usr/share/man/man1/haloforge.1.gz /usr/share/doc/haloforge/copyright /usr/share/doc/haloforge/README.md)
RPM_FILES=(/usr/bin/haloforge /usr/share/bash-completion/completions/haloforge
  /usr/share/zsh/site-functions/_haloforge /usr/share/fish/vendor_completions.d/haloforge.fish
  /usr/share/man/man1/haloforge.1.gz /usr/share/licenses/haloforge/LICENSE /usr/share/doc/haloforge/README.md)

# one GLOB: the single file of dist/ that matches, or die.
one() {
  local m
  mapfile -t m < <(compgen -G "$DIST/$1")
  [[ ${#m[@]} -eq 1 ]] || die "dist/ should hold exactly one $1 (run make dist): found ${m[*]}"
  printf '%s\n' "${m[0]}"
}

# has_all LIST PATH...: every PATH is a line of LIST.
has_all() {
  local list=$1 p
  shift
  for p in "$@"; do
    grep -qxF -- "$p" <<<"$list" || {
      log_error "missing: $p"
      return 1
    }
  done
}

phase_files() {
  log_step "Checksums and the archive"
  check "checksums.txt verifies" bash -c "cd '$DIST' && sha256sum --strict -c checksums.txt"
  check "checksums.txt names the archive, the .deb and the .rpm" \
    bash -c "[[ \$(grep -cE '  haloforge[-_].*(\.tar\.gz|\.deb|\.rpm)$' '$DIST/checksums.txt') == 3 ]]"
  local listing
  listing=$(tar -tzf "$TARBALL" | sed 's|^[^/]*/||')
  check "the archive holds the binary, README, TUTORIAL, LICENSE, completions and man page" \
    has_all "$listing" haloforge README.md TUTORIAL.md LICENSE completions/haloforge.bash \
    completions/haloforge.zsh completions/haloforge.fish haloforge.1.gz
  BIN_SHA=$(tar -xzOf "$TARBALL" --wildcards '*/haloforge' | sha256sum | cut -d' ' -f1)
}

phase_rpm() {
  log_step "The .rpm, read with rpm"
  local meta recommends requires files dump
  meta=$(rpm -qp --qf '%{NAME} %{VERSION} %{LICENSE} %{ARCH}\n' "$RPM" 2>/dev/null)
  log_info "rpm: $meta"
  check "rpm: name haloforge, MIT licence, x86_64" bash -c "[[ '$meta' =~ ^haloforge\ [^\ ]+\ MIT\ x86_64$ ]]"
  recommends=$(rpm -qp --recommends "$RPM" 2>/dev/null)
  requires=$(rpm -qp --requires "$RPM" 2>/dev/null)
  check "rpm: podman and distrobox are recommended" has_all "$recommends" podman distrobox
  check "rpm: neither podman nor distrobox is required" bash -c "! grep -qE '^(podman|distrobox)' <<<'$requires'"
  check "rpm: its digests check" bash -c "rpm -K --nosignature '$RPM' 2>/dev/null | grep -q 'digests OK'"
  files=$(rpm -qlp "$RPM" 2>/dev/null)
  check "rpm: the binary, completions, man page, licence and README in place" has_all "$files" "${RPM_FILES[@]}"
  dump=$(rpm -qp --dump "$RPM" 2>/dev/null | awk '$1 == "/usr/bin/haloforge" { print $4, $5 }')
  check "rpm: /usr/bin/haloforge is the archive's binary, mode 0755" [ "$dump" = "$BIN_SHA 0100755" ]
}

phase_deb_fields() {
  log_step "The .deb, read with dpkg-deb"
  local recommends depends files sha
  recommends=$(dpkg-deb -f "$DEB" Recommends)
  depends=$(dpkg-deb -f "$DEB" Depends)
  log_info "deb: $(dpkg-deb -f "$DEB" Package Version Architecture | tr '\n' ' ')Recommends: $recommends"
  check "deb: podman and distrobox are recommended" has_all "$(tr ',' '\n' <<<"$recommends" | tr -d ' ')" podman distrobox
  check "deb: neither podman nor distrobox is a dependency" bash -c "! grep -qE 'podman|distrobox' <<<'$depends'"
  files=$(dpkg-deb -c "$DEB" | awk '{ print $6 }' | sed 's|^\./|/|')
  check "deb: the binary, completions, man page, copyright and README in place" has_all "$files" "${DEB_FILES[@]}"
  sha=$(dpkg-deb --fsys-tarfile "$DEB" | tar -xO ./usr/bin/haloforge | sha256sum | cut -d' ' -f1)
  check "deb: /usr/bin/haloforge is the archive's binary" [ "$sha" = "$BIN_SHA" ]
}

# phase_install: dpkg -i in a fresh container; each answer goes to a file of $OUT.
phase_install() {
  log_step "The .deb installed with dpkg -i in a fresh Debian container"
  configure_podman
  local image commit
  image=$(sid_image) || die "could not build the sid image"
  OUT=$(mktemp -d /var/tmp/haloforge-dist-test.XXXXXX)
  trap 'rm -rf "$OUT"' EXIT
  podman run --rm --network=none -v "$DIST:/dist:ro" -v "$OUT:/out" \
    -e NO_COLOR=1 -e HALOFORGE_DEMO_SPEED=50 "$image" bash -c '
      a() { local name=$1; shift; "$@" >"/out/$name" 2>"/out/$name.err"; echo $? >"/out/$name.rc"; }
      a podman-absent bash -c "! command -v podman && ! command -v distrobox"
      a dpkg dpkg -i /dist/'"$(basename "$DEB")"'
      a which command -v haloforge
      a version haloforge --version
      a doctor haloforge doctor --json
      a demo haloforge demo --plain
      a complete bash -c ". /usr/share/bash-completion/completions/haloforge && complete -p haloforge"
      a remove dpkg -r haloforge
      a left bash -c "for f in '"${DEB_FILES[*]}"'; do [ ! -e \$f ] || echo \$f; done"
    ' || die "podman run failed"
  rc() { [[ $(cat "$OUT/$1.rc") == "$2" ]]; }
  check "the container has neither podman nor distrobox" rc podman-absent 0
  check "dpkg -i installs the .deb without them" rc dpkg 0
  check "haloforge is /usr/bin/haloforge" grep -qx /usr/bin/haloforge "$OUT/which"
  log_info "installed haloforge --version:"
  sed 's/^/    /' "$OUT/version"
  commit=$(git -C "$REPO" rev-parse HEAD 2>/dev/null) || die "$REPO is not a git checkout: no commit to compare --version with"
  check "--version names the commit make dist built ($commit)" grep -q "^commit $commit\b" "$OUT/version"
  check "--version names the version and the build date" \
    bash -c "grep -q '^haloforge version [0-9]' '$OUT/version' && grep -qE '^built [0-9]{4}-[0-9]{2}-[0-9]{2}T' '$OUT/version'"
  check "doctor --json exits 0 or 1 (no GPU here)" bash -c "rc=\$(cat '$OUT/doctor.rc'); [[ \$rc == 0 || \$rc == 1 ]]"
  check "doctor --json prints a haloforge/doctor/v1 report" \
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["schema"] == "haloforge/doctor/v1" and "summary" in d, d.get("schema")' "$OUT/doctor"
  check "demo --plain plays to the end" rc demo 0
  check "demo --plain printed the demo" grep -q '^haloforge demo' "$OUT/demo"
  check "the bash completion loads" grep -q '__start_haloforge haloforge$' "$OUT/complete"
  check "dpkg -r removes the package" rc remove 0
  check "dpkg -r leaves none of its files" bash -c "[[ ! -s '$OUT/left' ]] && [[ \$(cat '$OUT/left.rc') == 0 ]]"
  if ((FAILS)); then
    local f
    for f in dpkg demo doctor; do
      if [[ -s $OUT/$f.err ]]; then
        log_info "$f stderr: $(tail -n 5 "$OUT/$f.err")"
      fi
    done
  fi
}

main() {
  need_root
  command -v rpm >/dev/null || die "rpm is missing (apt-get install rpm; make deps does)"
  TARBALL=$(one 'haloforge_*_linux_amd64.tar.gz')
  DEB=$(one 'haloforge_*_amd64.deb')
  RPM=$(one 'haloforge-*.x86_64.rpm')
  phase_files
  phase_rpm
  phase_deb_fields
  phase_install
  if ((FAILS)); then
    die "dist-test: $FAILS check(s) failed in $((SECONDS - START))s"
  fi
  log_ok "dist-test: every check passed in $((SECONDS - START))s"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
