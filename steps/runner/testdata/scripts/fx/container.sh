#!/usr/bin/env bash
# Starts a detached container ($FX_IMAGE as $FX_NAME, podman flags in
# $FX_PODMAN) and succeeds: podman's conmon stays behind, as for a box.
set -Eeuo pipefail
read -r -a flags <<<"${FX_PODMAN:-}"
podman "${flags[@]}" run -d --rm --network none --name "${FX_NAME:?}" "${FX_IMAGE:?}" /sleeper
echo "container started"
