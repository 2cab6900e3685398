#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# The TUTORIAL's screenshot of `haloforge serve` from the real proof run: sourced by
# integration-distro.sh, which calls serve_screenshot OUT_DIR when HF_IT_SCREENSHOT=OUT_DIR
# (make screenshot-serve). The test user runs `haloforge serve --track llamacpp-distro` on the
# tiny model in a detached 120x62 tmux session (so the size is fixed), on the real sid box and
# the real llama-server; the pane is captured as the terminal drew it (tmux capture-pane -e)
# once the first completion answered and the answers were checked, then Ctrl-C is typed as a
# user would and the stop is captured too; the same for the wrong stack of the proof (a
# perturbed copy of the model against the original's reference: WRONG OUTPUT). Each capture becomes a one-frame asciicast, rendered with svg-term-cli and
# converted to PNG with rsvg-convert (as tui/demo/screenshots/make.sh does for the demo).
# Needs: tmux, rsvg-convert (librsvg2-bin), svg-term-cli (npm install --prefix /tmp/svgterm
# svg-term-cli, or SVG_TERM), a monospace font (fonts-dejavu-core).

SHOT_COLS=120
SHOT_ROWS=62

# shot_frame_cast FILE.ansi: a one-frame asciicast of a captured pane.
shot_frame_cast() {
  printf '{"version": 2, "width": %d, "height": %d}\n' "$SHOT_COLS" "$SHOT_ROWS"
  printf '[0.01, "o", "\\u001b[H\\u001b[2J'
  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\x1b/\\u001b/g' -e 's/\t/\\t/g' "$1" \
    | awk 'NR > 1 { printf "\\r\\n" } { printf "%s", $0 }'
  printf '"]\n'
}

# shot_render NAME WORK OUT: WORK/NAME.ansi to OUT/NAME.png.
shot_render() {
  local name=$1 work=$2 out=$3 svg_term=${SVG_TERM:-/tmp/svgterm/node_modules/.bin/svg-term}
  command -v svg-term >/dev/null && svg_term=svg-term
  shot_frame_cast "$work/$name.ansi" >"$work/$name.cast"
  "$svg_term" --in "$work/$name.cast" --out "$work/$name.svg" --at 100 \
    --width "$SHOT_COLS" --height "$SHOT_ROWS" --window --no-cursor --padding 12
  rsvg-convert --width 1600 --keep-aspect-ratio --background-color '#1d1f21' "$work/$name.svg" -o "$out/$name.png"
}

# shot_serve WORK NAME WAIT MODEL ARGS...: `haloforge serve` of MODEL (with ARGS) in the fixed-size
# pane, captured as WORK/NAME.ansi and .txt once its output matches WAIT (and the first
# completion and the answers check are done); then Ctrl-C, and the stop captured as
# WORK/NAME-stopped.*.
shot_serve() {
  local work=$1 name=$2 wait=$3 model=$4 sock=$1/$2.sock i cmd
  shift 4
  printf -v cmd 'sudo -u %q -H env -C %q TERM=xterm-256color HALOFORGE_ALLOW_NO_GPU=1 HALOFORGE_DISTROBOX_ROOT=1 %q serve --track llamacpp-distro --model %q --port %q --scripts %q --pins %q --state-dir %q --set %q' \
    "$IT_USER" "/home/$IT_USER" "$IT_DIR/haloforge" "$model" "$SERVE_PORT" "$IT_DIR/scripts" "$IT_DIR/versions.env" \
    "$STATE" "LLAMACPP_DISTRO_BOX=$IT_BOX"
  if (($#)); then
    printf -v cmd '%s%s' "$cmd" "$(printf ' %q' "$@")"
  fi
  tmux -S "$sock" -f /dev/null new-session -d -s serve -x "$SHOT_COLS" -y "$SHOT_ROWS" "$cmd; sleep 60"
  for ((i = 0; i < 1500; i++)); do
    tmux -S "$sock" capture-pane -p -t serve | grep -qE "$wait" && break
    sleep 0.2
  done
  sleep 1
  tmux -S "$sock" capture-pane -p -e -t serve >"$work/$name.ansi"
  tmux -S "$sock" capture-pane -p -t serve >"$work/$name.txt"
  tmux -S "$sock" send-keys -t serve C-c
  for ((i = 0; i < 300; i++)); do
    tmux -S "$sock" capture-pane -p -t serve | grep -q '^report: ' && break
    sleep 0.2
  done
  sleep 0.5
  tmux -S "$sock" capture-pane -p -e -t serve >"$work/$name-stopped.ansi"
  tmux -S "$sock" capture-pane -p -t serve >"$work/$name-stopped.txt"
  tmux -S "$sock" kill-server 2>/dev/null || true
}

# serve_screenshot OUT_DIR: the serve proof, captured (see the file header): the verify step's
# tiny model answering right (serve-proof*), and the perturbed copy against the original's
# reference answering wrong (serve-wrong*: REF_FILE and MODELS are the proof's).
serve_screenshot() {
  local out=$1 work
  work=$(mktemp -d /var/tmp/haloforge-serve-shot.XXXXXX)
  chmod 0755 "$work"
  shot_serve "$work" serve-proof 'answers right|WRONG OUTPUT|answers not' "$STATE/llamacpp-distro/tiny-random.gguf"
  shot_serve "$work" serve-wrong 'likely fix' "$MODELS/perturbed.gguf" --reference "$REF_FILE"
  mkdir -p "$out"
  local n
  for n in serve-proof serve-proof-stopped serve-wrong; do
    shot_render "$n" "$work" "$out"
  done
  # The same screens as text, for the TUTORIAL's text blocks.
  cp "$work/serve-proof.txt" "$work/serve-proof-stopped.txt" "$work/serve-wrong.txt" "$work/serve-wrong-stopped.txt" "$out/"
  rm -rf "$work"
  log_ok "screenshots: $out/serve-proof.png, $out/serve-proof-stopped.png, $out/serve-wrong.png"
}
