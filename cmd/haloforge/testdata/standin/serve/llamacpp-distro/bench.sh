#!/usr/bin/env bash
# A stand-in for llamacpp-distro's bench step in BenchmarkBenchTrackOverhead: the engine
# (llama-bench in a box) cannot run in a benchmark. It takes $FX_ENGINE_SECONDS as the engine
# would, records that time as the real bench script does (scripts/serve/lib.sh bench_run: the
# facts file's time line, and the log's "haloforge: engine time N ms"), and leaves the real
# llama-bench JSONL of the sid proof ($FX_RESULTS) where haloforge bench reads it.
set -Eeuo pipefail
t0=$(date +%s%N)
sleep "${FX_ENGINE_SECONDS:-1}"
cat "$FX_RESULTS"
cp "$FX_RESULTS" "$HALOFORGE_RUN_DIR/$HALOFORGE_BENCH_RESULT"
t1=$(date +%s%N)
ms=$(((t1 - t0) / 1000000))
echo "haloforge: engine time $ms ms"
printf 'time\tengine\t%d\n' "$ms" >>"$HALOFORGE_FACTS_FILE"
