# shellcheck shell=bash
# Replay helpers for haloforge's demo steps: they print real build logs (see
# logs/SOURCES.md) at a believable pace, so the wizard can be shown on a
# machine without a GPU. Sourced by the demo step scripts, never run.
#
# HALOFORGE_DEMO_SPEED: 1 (the default) plays the whole demo track in about
# 80 seconds; larger whole numbers play it that many times faster.

demo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
demo_logs=$demo_root/logs

demo_speed=${HALOFORGE_DEMO_SPEED:-1}
if [[ ! $demo_speed =~ ^[1-9][0-9]*$ ]]; then
  echo "HALOFORGE_DEMO_SPEED must be a whole number >= 1, got '$demo_speed'" >&2
  exit 2
fi

# A file descriptor that never becomes readable: `read -t` on it is a sleep
# without forking a process per line, which matters at high speeds.
exec {demo_sleep_fd}<> <(:)

# demo_sleep MICROSECONDS waits that long (already scaled by the speed).
demo_sleep() {
  local us=$1
  ((us > 0)) || return 0
  read -r -t "$(printf '%d.%06d' $((us / 1000000)) $((us % 1000000)))" -u "$demo_sleep_fd" || true
}

# replay FILE SECONDS prints FILE line by line, spread over SECONDS at speed 1.
# Short waits are batched so that fast replays do not cost a syscall a line.
replay() {
  local file=$demo_logs/$1 seconds=$2 lines per debt=0 line
  lines=$(wc -l <"$file")
  ((lines > 0)) || return 0
  per=$((seconds * 1000000 / demo_speed / lines))
  while IFS= read -r line || [[ -n $line ]]; do
    printf '%s\n' "$line"
    debt=$((debt + per))
    if ((debt >= 20000)); then
      demo_sleep "$debt"
      debt=0
    fi
  done <"$file"
  demo_sleep "$debt"
}

# replaying SOURCE says, in the log itself, that what follows is a recorded
# log and where it was recorded: the demo never passes itself off as a build.
replaying() {
  printf 'haloforge demo: replaying a recorded log (%s)\n' "$*"
}

# demo_state_dir is where haloforge keeps its state; ApplyFix writes here.
demo_state_dir() {
  printf '%s\n' "${HALOFORGE_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/haloforge}"
}
