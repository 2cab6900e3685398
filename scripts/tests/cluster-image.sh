#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# The node image of the cluster proof (integration-cluster.sh): the Debian sid base image of
# sid-image.sh plus a real OpenSSH server and client, iproute2, procps, and Debian's llama.cpp
# with the Vulkan and RPC backends and Mesa's lavapipe (scripts/SOURCES.md, "llamacpp-distro"),
# built with `podman build` and cached as
# localhost/haloforge-sid-ssh:<key>, where <key> hashes the base image's key and this recipe.
# The .deb of libggml0-backend-rpc is kept in /var/cache/haloforge-it/ so the proof can take
# the package away from one node and put it back without a mirror. Nothing relies on the
# cache: a missing image is built (~1 min).
#
# As a library: source it, then cluster_image (prints the image name on stdout, logs on
# stderr). As a command: scripts/tests/cluster-image.sh. Root only (rootful podman).

# shellcheck source=./sid-image.sh
. "$(dirname "${BASH_SOURCE[0]}")/sid-image.sh"

# Bump when the recipe below changes in a way the key does not see.
CLUSTER_IMAGE_RECIPE=1
CLUSTER_IMAGE_PACKAGES=(openssh-server openssh-client iproute2 procps llama.cpp-tools llama.cpp-tools-extra
  libggml0-backend-vulkan libggml0-backend-rpc mesa-vulkan-drivers python3-gguf python3-numpy)

cluster_image() {
  local base key name ctx
  base=$(sid_image) || return 1
  key=$(printf 'v%s|%s|%s\n' "$CLUSTER_IMAGE_RECIPE" "$base" "${CLUSTER_IMAGE_PACKAGES[*]}" | sha256sum | cut -c1-12)
  name=localhost/haloforge-sid-ssh:$key
  if podman image exists "$name"; then
    printf 'cluster image %s cached\n' "$name" >&2
    printf '%s\n' "$name"
    return 0
  fi
  ctx=$(mktemp -d /var/tmp/haloforge-cluster-image.XXXXXX)
  cat >"$ctx/Containerfile" <<EOF
FROM $base
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${CLUSTER_IMAGE_PACKAGES[*]} >/dev/null \\
 && mkdir -p /var/cache/haloforge-it && cd /var/cache/haloforge-it && apt-get download -qq libggml0-backend-rpc \\
 && rm -rf /var/lib/apt/lists/* /etc/ssh/ssh_host_*_key* \\
 && useradd --create-home --shell /bin/bash halo \\
 && mkdir -p /run/sshd
EOF
  printf 'cluster image: podman build from %s (%s)\n' "$base" "${CLUSTER_IMAGE_PACKAGES[*]}" >&2
  if ! podman build --quiet -t "$name" "$ctx" >"$ctx/build.log" 2>&1; then
    printf 'cluster image: podman build failed; last lines:\n' >&2
    tail -n 20 "$ctx/build.log" >&2
    rm -rf "$ctx"
    return 1
  fi
  rm -rf "$ctx"
  printf 'cluster image %s built\n' "$name" >&2
  printf '%s\n' "$name"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -Eeuo pipefail
  [[ $(id -u) -eq 0 ]] || {
    printf 'cluster-image.sh: run as root (rootful podman)\n' >&2
    exit 2
  }
  cluster_image
fi
