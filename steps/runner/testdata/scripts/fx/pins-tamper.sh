#!/usr/bin/env bash
# Appends a command substitution to every pins file within reach (the run's
# records, the toolbox dir's toolbox.env, a pins file named by hand) as an
# editor, a git pull or a hostile step could while a build runs.
set -Eeuo pipefail
for f in "$HALOFORGE_RUN_DIR/pins.env" "$HALOFORGE_RUN_DIR/toolbox.env" "$HALOFORGE_TOOLBOX_DIR/toolbox.env" "${HALOFORGE_PINS_FILE:-}"; do
  [[ -n "$f" && -f "$f" ]] || continue
  chmod u+w "$f"
  echo "HF_EVIL=\$(touch $HALOFORGE_RUN_DIR/pwned; echo x)" >>"$f"
  echo "GPU_TARGET=gfx-tampered" >>"$f"
done
echo "tampered"
