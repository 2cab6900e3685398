# shellcheck shell=bash
# The answers check's parts, stood in for the bats tests of the llama.cpp tracks (loaded with
# `load answers_standin`; $T is the test's directory). No GPU here; the real llama-server on
# lavapipe against its CPU backend, with the real haloforge verify, is integration-distro.sh.

# stand_in_answers: the answers check's parts, stood in (no GPU here; the real llama-server on
# lavapipe against its CPU backend, with the real haloforge verify: integration-distro.sh):
#   - a stand-in llama-server: answers /health on the --port it was given, logs its arguments;
#     its --help names --no-mmap, as the real one does;
#   - a stand-in haloforge (HALOFORGE_BIN) whose verify keeps a reference per --record-for and
#     answers --reference-for, or --url alone (the known answers), with the verdict in
#     FX_ANSWERS (right or wrong), in haloforge verify's own words.
stand_in_answers() {
  mkdir -p "$T/bin"
  cat >"$T/bin/llama-server" <<FAKE
#!/usr/bin/env python3
import http.server, sys
if "--help" in sys.argv:
    print("--mmap, --no-mmap   whether to memory-map model")
    sys.exit(0)
with open("$T/server-calls", "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b'{"status":"ok"}')
    def log_message(self, *a):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[sys.argv.index("--port") + 1])), H).serve_forever()
FAKE
  cat >"$T/bin/haloforge-standin" <<FAKE
#!/usr/bin/env bash
printf '%s\n' "\$*" >>"$T/hf-calls"
case "\$*" in
*--cached*) [[ -f "$T/kept" ]] && { echo "kept: $T/ref.json (recorded on CPU by llama.cpp b11669 on 2026-11-29)"; exit 0; }
  echo "no reference kept for \$5: record one with --record-for"; exit 1 ;;
*--record-for*) : >"$T/kept"; echo "recorded: 6 prompts from m to $T/ref.json"; exit 0 ;;
*--reference-for*)
  echo "verify: m at http://127.0.0.1:1 (llama.cpp b11669): 6 prompts, greedy, top-5 logprobs; compared with the reference $T/ref.json (recorded on CPU)"
  if [[ \${FX_ANSWERS:-right} == right ]]; then
    echo "right: 6 prompts agree with the reference recorded on CPU by llama.cpp b11669 on 2026-11-29 (58 of 58 positions compared, max logprob distance 0.131, tolerance 0.3)"; exit 0
  fi
  echo 'WRONG OUTPUT: prompt 1 (capital, "The capital of France is"), position 0: expected " Paris" (logprob -0.1), got " Lyon" (logprob -1.2): the distributions differ by 1.1 nats (tolerance 0.3)'; exit 1 ;;
*--url*)
  echo "verify: m at http://127.0.0.1:1 (ollama 0.32.15): 6 prompts, greedy, top-5 logprobs; known answers and degenerate output (no reference)"
  if [[ \${FX_ANSWERS:-right} == right ]]; then
    echo "right: the 4 known answers are there and no answer is degenerate"; exit 0
  fi
  echo 'WRONG OUTPUT: prompt 1 (capital, "The capital of France is"): degenerate output: a run of 8 "!"'; exit 1 ;;
esac
exit 2
FAKE
  chmod +x "$T/bin/llama-server" "$T/bin/haloforge-standin"
  export HALOFORGE_BIN=$T/bin/haloforge-standin HALOFORGE_TRACK=${HALOFORGE_TRACK:-llamacpp-distro}
}
