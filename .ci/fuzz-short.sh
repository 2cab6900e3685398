#!/usr/bin/env bash
# A short run of every fuzz target (make fuzz-short). A real finding prints
# "Failing input" and saves a crasher under testdata/fuzz: that fails at once.
# Go's fuzz coordinator can also end with a bare "context deadline exceeded"
# when the time runs out while a worker is starting on a loaded machine; that
# is not a finding, so such a run is tried again, up to three times.
set -Eeuo pipefail
fuzztime=${FUZZTIME:-5s}
go=${GO:-go}
for pkg in $("$go" list ./...); do
  for f in $("$go" test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true); do
    echo "fuzz $pkg $f ($fuzztime)"
    for attempt in 1 2 3; do
      if out=$("$go" test -run='^$' -fuzz="^$f\$" -fuzztime="$fuzztime" "$pkg" 2>&1); then
        break
      fi
      if grep -q 'Failing input\|panic:' <<<"$out" || ! grep -q 'context deadline exceeded' <<<"$out"; then
        tail -40 <<<"$out"
        exit 1
      fi
      echo "  attempt $attempt ended on Go's fuzz deadline without a finding; trying again"
      if [ "$attempt" = 3 ]; then
        tail -20 <<<"$out"
        exit 1
      fi
    done
  done
done
