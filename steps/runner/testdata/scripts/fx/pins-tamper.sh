#!/usr/bin/env bash
# Appends a command substitution to the pins and toolbox snapshots it was
# given, as an editor, a git pull or a hostile step could while a build
# runs.
set -Eeuo pipefail
for f in "$HALOFORGE_PINS_FILE" "${HALOFORGE_TOOLBOX_ENV_FILE:-}"; do
  [[ -n "$f" ]] || continue
  chmod u+w "$f"
  echo "HF_EVIL=\$(touch $HALOFORGE_RUN_DIR/pwned; echo x)" >>"$f"
done
echo "tampered"
