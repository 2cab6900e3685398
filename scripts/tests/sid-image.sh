#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# A Debian sid base image for the real-component proofs (integration-distro.sh, the cluster
# proof): debootstrap --variant=minbase from the host's Debian mirror, imported into podman as
# localhost/haloforge-sid:<key>, where <key> hashes everything that goes into the image, so an
# unchanged recipe reuses the image a previous run of the same machine left, and a changed one
# builds anew. Nothing relies on the cache: a missing image is simply built (~40 s).
#
# As a library (source it, then call sid_image [EXTRA_PACKAGES...]; it prints the image name
# on stdout and logs on stderr) or as a command:
#   scripts/tests/sid-image.sh [EXTRA_PACKAGES...]     build or reuse; print the image name
# Root only (debootstrap, rootful podman). Packages that distrobox's first start would install
# are in the image, so `distrobox enter` runs no apt.
# The mirror's sid Release file is past its Valid-Until date here (seen 2026-11-24), so the image's
# apt is configured with Acquire::Check-Valid-Until "false" (a test-image setting only).
# distrobox older than 1.8.2 (bookworm ships 1.4.2.1) seeds the user's password with
# `chpasswd -e` and a random string, which sid's shadow rejects ("invalid password hash":
# kyuz0/amd-strix-halo-comfyui-toolboxes#25, fixed by distrobox 1.8.2); the host's distrobox
# cannot be upgraded from this machine's bookworm sources, so the image carries
# /usr/local/sbin/chpasswd, a stand-in named haloforge-test-chpasswd-shim that turns such
# a string into a locked password ("!") and hands everything else to the real chpasswd.

# sid_mirror: the first Debian mirror the host's apt uses (deb822 sources, then sources.list).
sid_mirror() {
  local m=''
  if [[ -r /etc/apt/sources.list.d/debian.sources ]]; then
    m=$(awk '/^URIs:/ && $2 !~ /security/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources)
  fi
  if [[ -z $m && -r /etc/apt/sources.list ]]; then
    m=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }' /etc/apt/sources.list)
  fi
  printf '%s\n' "${m:-http://deb.debian.org/debian}"
}

# The packages distrobox's init would otherwise install on first enter, plus CA certificates.
SID_BASE_PACKAGES=sudo,passwd,diffutils,pinentry-curses,wget,curl,less,bc,time,lsof,procps,libcap2-bin,ca-certificates
# Bump when the recipe below changes in a way the key does not see.
SID_RECIPE_VERSION=2

# sid_image_key EXTRA...: the cache key: a short hash of the recipe's inputs.
sid_image_key() {
  local extra=${*:-}
  printf 'v%s|sid|%s|%s|%s\n' "$SID_RECIPE_VERSION" "$SID_BASE_PACKAGES" "${extra// /,}" "$(sid_mirror)" \
    | sha256sum | cut -c1-12
}

# sid_image EXTRA...: build (or reuse) the image; prints its name.
sid_image() {
  local name key root log
  key=$(sid_image_key "$@")
  name=localhost/haloforge-sid:$key
  if podman image exists "$name"; then
    printf 'sid image %s cached\n' "$name" >&2
    printf '%s\n' "$name"
    return 0
  fi
  command -v debootstrap >/dev/null || {
    printf 'sid image: debootstrap is missing (apt-get install debootstrap)\n' >&2
    return 1
  }
  root=$(mktemp -d /var/tmp/haloforge-sid-rootfs.XXXXXX)
  log=/var/tmp/haloforge-sid-debootstrap.$key.log
  local include=$SID_BASE_PACKAGES
  if (($#)); then
    include+=,$(
      IFS=,
      printf '%s' "$*"
    )
  fi
  printf 'sid image: debootstrap sid from %s (log: %s)\n' "$(sid_mirror)" "$log" >&2
  if ! debootstrap --variant=minbase --include="$include" sid "$root" "$(sid_mirror)" >"$log" 2>&1; then
    printf 'sid image: debootstrap failed; last lines of %s:\n' "$log" >&2
    tail -n 20 "$log" >&2
    rm -rf "$root"
    return 1
  fi
  rm -f "$root/etc/apt/sources.list"
  mkdir -p "$root/etc/apt/sources.list.d" "$root/etc/apt/apt.conf.d"
  printf 'Types: deb\nURIs: %s\nSuites: sid\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$(sid_mirror)" >"$root/etc/apt/sources.list.d/debian.sources"
  printf 'Acquire::Check-Valid-Until "false";\n' >"$root/etc/apt/apt.conf.d/99haloforge-test-valid-until"
  # No recommends by default: the proof installs exactly what the track names.
  printf 'APT::Install-Recommends "false";\n' >"$root/etc/apt/apt.conf.d/99haloforge-test-no-recommends"
  mkdir -p "$root/usr/local/sbin"
  cat >"$root/usr/local/sbin/chpasswd" <<'SHIM'
#!/bin/sh
# haloforge-test-chpasswd-shim (test image only; see scripts/tests/sid-image.sh): distrobox
# < 1.8.2 passes a random string to `chpasswd -e`, which this shadow rejects as a hash.
case " $* " in
  *" -e "* | *" --encrypted "*)
    sed -E 's/^([^:]*):([^$!*][^:]*)$/\1:!/' | /usr/sbin/chpasswd "$@"
    ;;
  *) exec /usr/sbin/chpasswd "$@" ;;
esac
SHIM
  chmod 0755 "$root/usr/local/sbin/chpasswd"
  rm -rf "$root/var/cache/apt/archives/"*.deb "$root/var/lib/apt/lists/"*_Packages 2>/dev/null || true
  if ! tar -C "$root" -c . | podman import --quiet - "$name" >/dev/null; then
    rm -rf "$root"
    printf 'sid image: podman import failed\n' >&2
    return 1
  fi
  rm -rf "$root"
  printf 'sid image %s built\n' "$name" >&2
  printf '%s\n' "$name"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -Eeuo pipefail
  [[ $(id -u) -eq 0 ]] || {
    printf 'sid-image.sh: run as root (debootstrap and rootful podman)\n' >&2
    exit 2
  }
  sid_image "$@"
fi
