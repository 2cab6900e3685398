#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Demo bench step: replays the real llama-bench run of the llamacpp-distro proof
# (logs/llama-bench-run.log), records the engine time that run measured as the real bench
# script does (the facts file's time line), and leaves its real JSONL results
# (logs/llama-bench.jsonl) where haloforge bench reads them
# ($HALOFORGE_RUN_DIR/$HALOFORGE_BENCH_RESULT).
set -Eeuo pipefail
# shellcheck source=../../lib/replay.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../lib/replay.sh"
replaying "llama-bench of the llamacpp-distro proof, Debian sid on lavapipe"
replay llama-bench-run.log 3
[[ ${HALOFORGE_BENCH_RESULT:-} =~ ^[A-Za-z0-9._-]+$ ]] || exit 2
cp "$demo_logs/llama-bench.jsonl" "$HALOFORGE_RUN_DIR/$HALOFORGE_BENCH_RESULT"
ms=$(sed -n 's/^haloforge: engine time \([0-9]*\) ms$/\1/p' "$demo_logs/llama-bench-run.log")
if [[ -n ${HALOFORGE_FACTS_FILE:-} && -n $ms ]]; then
  printf 'time\tengine\t%s\n' "$ms" >>"$HALOFORGE_FACTS_FILE"
fi
