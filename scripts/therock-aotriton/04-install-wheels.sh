#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# therock-aotriton, step "install" (04-install-wheels.sh): install exactly the wheels step 02
# built in its last run (the list in wheels.txt), never an older wheel lying in the output
# directory, and check that torch carries the AOTriton library.
set -Eeuo pipefail
# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# shellcheck source=./common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
hf_init "$@"
aot_paths

need_venv
log_step "Install the wheels listed in $AOT_WHEELS"
if is_dry_run && [[ ! -s "$AOT_WHEELS" ]]; then
  run "$AOT_PY" -m pip install --force-reinstall --no-deps "$PYOUT/torch-<this run>.whl" "$PYOUT/torchaudio-<this run>.whl" "$PYOUT/torchvision-<this run>.whl"
  exit 0
fi
[[ -s "$AOT_WHEELS" ]] || die "no $AOT_WHEELS: run the pytorch step first"
mapfile -t wheels <"$AOT_WHEELS"
tag=$(py_tag "$AOT_PY")
for w in "${wheels[@]}"; do
  [[ -f "$w" ]] || die "listed wheel is gone: $w (re-run the pytorch step)"
  [[ "$(basename "$w")" == *"-$tag-$tag-"* ]] || die "$w is not for this venv's Python ($tag)"
done
run "$AOT_PY" -m pip install --force-reinstall --no-deps "${wheels[@]}"
is_dry_run && exit 0

log_step "AOTriton inside the installed torch"
lib=$("$AOT_PY" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')
compgen -G "$lib/libaotriton_v2.so*" >/dev/null \
  || die "torch at $lib has no libaotriton_v2.so: it was built without AOTriton (was USE_FLASH_ATTENTION on?)"
log_ok "torch $("$AOT_PY" -c 'import torch; print(torch.__version__)') with $(basename "$(compgen -G "$lib/libaotriton_v2.so*" | head -n 1)")"
