#!/usr/bin/env bash
# make.sh: remake TUTORIAL.md's screenshots from a real `haloforge demo` run.
#
# It builds haloforge, records `haloforge demo` with asciinema inside a detached
# 120x40 tmux session (so the size is fixed whatever your terminal), and drives
# it with keys like a person would. At each screen worth showing it takes the
# screen as the terminal drew it (tmux capture-pane, colours included), makes
# it a one-frame asciicast, renders that with svg-term-cli and converts it to
# PNG with rsvg-convert.
#
# Why not svg-term-cli on the whole recording: its terminal emulator gets
# Bubble Tea v2's incremental redraws wrong (stale cells, lines lost after
# erase-in-line), which tmux, like a real terminal, draws right. The full
# recording is still kept on request (KEEP_CAST=1) for an animated version.
#
# Needs: go, tmux, asciinema and rsvg-convert (apt-get install tmux asciinema
# librsvg2-bin), svg-term-cli (npm install --prefix /tmp/svgterm svg-term-cli;
# found on PATH, else there; or set SVG_TERM), and a monospace font
# (fonts-dejavu-core).
# Environment: HALOFORGE_DEMO_SPEED (default 3: fast enough to wait for,
# slow enough that every screen is drawn), KEEP_CAST=1 keeps the full
# recording here as demo.cast.
set -Eeuo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
speed=${HALOFORGE_DEMO_SPEED:-3}
cols=120
rows=40

die() {
  echo "make.sh: $*" >&2
  exit 1
}

svg_term=${SVG_TERM:-}
if [[ -z $svg_term ]]; then
  if command -v svg-term >/dev/null; then
    svg_term=svg-term
  elif [[ -x /tmp/svgterm/node_modules/.bin/svg-term ]]; then
    svg_term=/tmp/svgterm/node_modules/.bin/svg-term
  else
    die "svg-term-cli not found: npm install --prefix /tmp/svgterm svg-term-cli"
  fi
fi
for tool in go tmux asciinema rsvg-convert; do
  command -v "$tool" >/dev/null || die "$tool not found (see the header of this script)"
done

work=$(mktemp -d)
sock=$work/tmux.sock
cleanup() {
  tmux -S "$sock" kill-server 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

echo "building haloforge"
(cd "$repo" && go build -o "$work/haloforge" ./cmd/haloforge)

cast=$work/demo.cast
marks=$work/marks
: >"$marks"

# The recorded command sees a 256-colour xterm, as most readers' terminals are.
printf -v demo_cmd 'env XDG_STATE_HOME=%q HALOFORGE_DEMO_SPEED=%q TERM=xterm-256color %q demo' \
  "$work/state" "$speed" "$work/haloforge"
printf -v rec_cmd 'asciinema rec -q --overwrite --cols %d --rows %d -c %q %q' \
  "$cols" "$rows" "$demo_cmd" "$cast"

tmux -S "$sock" -f /dev/null new-session -d -s demo -x "$cols" -y "$rows" "$rec_cmd"
tmux -S "$sock" set-option -t demo remain-on-exit on >/dev/null

screen() { tmux -S "$sock" capture-pane -p -t demo; }

# wait_for TEXT SECONDS: poll the screen until TEXT shows.
wait_for() {
  local text=$1 limit=$(($2 * 10)) i
  for ((i = 0; i < limit; i++)); do
    if screen | grep -qF -- "$text"; then
      return 0
    fi
    sleep 0.1
  done
  screen >&2
  die "'$text' not on screen after $2 s"
}

# settle: wait until the screen has not changed for half a second.
settle() {
  local prev="" cur i
  for ((i = 0; i < 50; i++)); do
    cur=$(screen)
    if [[ $cur == "$prev" ]]; then
      return 0
    fi
    prev=$cur
    sleep 0.5
  done
}

# mark NAME: the screen now becomes NAME.png. It waits a second first, so
# that nothing is half drawn.
mark() {
  sleep 1
  tmux -S "$sock" capture-pane -p -e -t demo >"$work/$1.ansi"
  echo "$1" >>"$marks"
  echo "  $1"
}

key() {
  tmux -S "$sock" send-keys -t demo "$1"
  sleep 0.3
}

echo "recording"
wait_for gfx1151 10
settle
mark detect
key Enter
settle
mark picker
key Enter
settle
mark plan
key Enter
wait_for therock-amdsmi-double-free 120
wait_for "✗ rocm" 60 # the step has ended: r retries it now
sleep 0.3
mark hint
key r
wait_for "Target device: rocm" 120
sleep 0.3
mark run
wait_for Results 180
settle
mark summary
key q
if [[ $(tmux -S "$sock" display-message -p -t demo '#{pane_dead}') != 1 ]]; then
  key y
fi
for ((i = 0; i < 50; i++)); do
  [[ $(tmux -S "$sock" display-message -p -t demo '#{pane_dead}') == 1 ]] && break
  sleep 0.1
done
[[ -s $cast ]] || die "asciinema wrote no recording"

# frame_cast NAME: a one-frame asciicast of the captured screen NAME.ansi:
# clear, then the lines, as JSON strings (backslash, quote and ESC escaped).
frame_cast() {
  printf '{"version": 2, "width": %d, "height": %d}\n' "$cols" "$rows"
  printf '[0.01, "o", "\\u001b[H\\u001b[2J'
  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\x1b/\\u001b/g' -e 's/\t/\\t/g' "$work/$1.ansi" \
    | awk 'NR > 1 { printf "\\r\\n" } { printf "%s", $0 }'
  printf '"]\n'
}

echo "rendering"
while read -r name; do
  frame_cast "$name" >"$work/$name.cast"
  "$svg_term" --in "$work/$name.cast" --out "$work/$name.svg" --at 100 \
    --width "$cols" --height "$rows" --window --no-cursor --padding 12
  rsvg-convert --width 1600 --keep-aspect-ratio --background-color '#1d1f21' \
    "$work/$name.svg" -o "$here/$name.png"
  echo "  $here/$name.png"
done <"$marks"
if [[ -n ${KEEP_CAST:-} ]]; then
  cp "$cast" "$here/demo.cast"
fi
