#!/usr/bin/env bash
# shellcheck source-path=SCRIPTDIR
# Proof of `haloforge cluster` on real components (make integration-cluster, as root):
#   - three podman containers of a Debian sid image (cluster-image.sh: sid-image.sh's base plus
#     OpenSSH, iproute2, procps and Debian's llama.cpp with the Vulkan and RPC backends and Mesa's
#     lavapipe) on a private podman network with fixed addresses, each running a real sshd with
#     host keys made at its start; the test reads each host key through podman (the "console")
#     into its own known_hosts, makes its own key pair, and hands haloforge its own ssh_config
#     (--ssh-config / HALOFORGE_SSH_CONFIG), so nothing touches ~/.ssh; no passwords anywhere;
#   - haloforge (this build) copied onto each node, with versions.env in the login directory;
#   - cluster check over real SSH finds a node whose host key is not known (and refuses it), then
#     two planted differences: a changed versions.env on one node and a real package removed from
#     another (libggml0-backend-rpc, dpkg -r); once both are fixed, it passes;
#   - cluster up --engine rpc: ggml-rpc-server on the two workers (Vulkan on lavapipe) bound to
#     their cluster addresses only, llama-server --rpc on the head with a tiny random-weight model
#     (python3-gguf); the head answers /v1/completions, and the workers' logs show the head's
#     connections; a node without the RPC backend makes up fail with its log and stop the rest;
#   - cluster down leaves no process of haloforge's on any node (ps in each container).
# Cleans up its containers, network and keys. HF_IT_KEEP=1 keeps them; HALOFORGE_BIN picks the
# binary (default bin/haloforge, else go build).

# shellcheck source=../lib/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/common.sh"
# check, contains, need_root, install_packages and configure_podman are the therock
# integration test's (sourcing it defines its functions and runs nothing).
# shellcheck source=./integration.sh
. "$(dirname "${BASH_SOURCE[0]}")/integration.sh"
# shellcheck source=./cluster-image.sh
. "$(dirname "${BASH_SOURCE[0]}")/cluster-image.sh"

REPO=$(cd "$HF_LIB_DIR/../.." && pwd)
NET=haloforge-cluster-it
SUBNET=10.89.77.0/24
NODES=(halo1 halo2 halo3)
declare -A IP=([halo1]=10.89.77.10 [halo2]=10.89.77.11 [halo3]=10.89.77.12)
RPC_PORT=50052
API_PORT=8080
IT_DIR=''
START=$SECONDS
FAILS=0
declare -A T=()

ctr() { printf 'haloforge-cluster-it-%s\n' "$1"; }

cleanup() {
  local n
  if [[ ${HF_IT_KEEP:-0} == 1 ]]; then
    log_info "HF_IT_KEEP=1: containers, network and $IT_DIR kept"
    return 0
  fi
  for n in "${NODES[@]}"; do
    podman rm -f -t 0 "$(ctr "$n")" >/dev/null 2>&1 || true
  done
  podman network rm -f "$NET" >/dev/null 2>&1 || true
  [[ -n $IT_DIR ]] && rm -rf "$IT_DIR"
}

# on NODE CMD...: run in a node's container as the login user.
on() {
  local n=$1
  shift
  podman exec --user halo --workdir /home/halo "$(ctr "$n")" "$@"
}

# as_root_on NODE CMD...: run in a node's container as root (the test's own hands).
as_root_on() {
  local n=$1
  shift
  podman exec "$(ctr "$n")" "$@"
}

hf() {
  "$IT_DIR/haloforge" "$@"
}

setup() {
  local n image key
  IT_DIR=$(mktemp -d /var/tmp/haloforge-cluster-it.XXXXXX)
  chmod 0700 "$IT_DIR"
  local bin=${HALOFORGE_BIN:-$REPO/bin/haloforge}
  if [[ ! -x $bin ]]; then
    bin=$IT_DIR/haloforge.build
    (cd "$REPO" && go build -o "$bin" ./cmd/haloforge) || die "go build ./cmd/haloforge failed"
  fi
  install -m 0755 "$bin" "$IT_DIR/haloforge"
  image=$(cluster_image) || die "could not build the cluster node image"
  podman network rm -f "$NET" >/dev/null 2>&1 || true
  for n in "${NODES[@]}"; do
    podman rm -f -t 0 "$(ctr "$n")" >/dev/null 2>&1 || true
  done
  run podman network create --subnet "$SUBNET" "$NET" >/dev/null
  ssh-keygen -q -t ed25519 -N '' -C haloforge-cluster-it -f "$IT_DIR/id_ed25519"
  : >"$IT_DIR/known_hosts"
  for n in "${NODES[@]}"; do
    # Host keys made at the container's start: no two runs share them.
    run podman run -d --name "$(ctr "$n")" --hostname "$n" --network "$NET" --ip "${IP[$n]}" "$image" \
      bash -c 'ssh-keygen -A >/dev/null && exec /usr/sbin/sshd -D -e -o PasswordAuthentication=no -o KbdInteractiveAuthentication=no' >/dev/null
    as_root_on "$n" install -d -m 0700 -o halo -g halo /home/halo/.ssh
    podman cp "$IT_DIR/id_ed25519.pub" "$(ctr "$n"):/home/halo/.ssh/authorized_keys"
    as_root_on "$n" chown halo:halo /home/halo/.ssh/authorized_keys
    podman cp "$IT_DIR/haloforge" "$(ctr "$n"):/usr/local/bin/haloforge"
    podman cp "$REPO/versions.env" "$(ctr "$n"):/home/halo/versions.env"
    as_root_on "$n" chown halo:halo /home/halo/versions.env
  done
  # The host keys, read through podman rather than trusted on first use.
  for n in "${NODES[@]}"; do
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      key=$(as_root_on "$n" cat /etc/ssh/ssh_host_ed25519_key.pub 2>/dev/null) && break
      sleep 0.2
    done
    [[ -n $key ]] || die "no host key on $n"
    [[ $n == halo3 ]] && printf '%s\n' "$key" >"$IT_DIR/halo3.hostkey" && continue # added later: the unknown-key case
    printf '%s %s\n' "${IP[$n]}" "${key% *}" >>"$IT_DIR/known_hosts"
  done
  cat >"$IT_DIR/ssh_config" <<EOF
Host halo1
  HostName ${IP[halo1]}
Host halo3
  HostName ${IP[halo3]}
Host *
  User halo
  IdentityFile $IT_DIR/id_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $IT_DIR/known_hosts
  GlobalKnownHostsFile /dev/null
  PasswordAuthentication no
  KbdInteractiveAuthentication no
EOF
  # The inventory: an alias, a user@IP and another alias as SSH destinations; the cluster
  # addresses are the containers' addresses on the private network.
  cat >"$IT_DIR/cluster.toml" <<EOF
# haloforge cluster proof: three sid containers on $NET ($SUBNET)
model = "/home/halo/tiny.gguf"
port = $API_PORT
rpc_port = $RPC_PORT
# lavapipe is a CPU-type Vulkan device, which ggml skips unless it is listed
env = { GGML_VK_VISIBLE_DEVICES = "0" }

[[node]]
name = "halo1"
ssh = "halo1"
address = "${IP[halo1]}"
role = "head"

[[node]]
name = "halo2"
ssh = "halo@${IP[halo2]}"
address = "${IP[halo2]}"
role = "worker"

[[node]]
name = "halo3"
ssh = "halo3"
address = "${IP[halo3]}"
role = "worker"
EOF
  # The tiny model, written on the head by python3-gguf (only the head needs it for RPC).
  podman cp "$REPO/scripts/llamacpp-distro/tiny_model.py" "$(ctr halo1):/home/halo/tiny_model.py"
  on halo1 python3 /home/halo/tiny_model.py /home/halo/tiny.gguf || die "tiny model not written"
  export HALOFORGE_SSH_CONFIG=$IT_DIR/ssh_config NO_COLOR=1
}

# status_of JSON NODE CHECK: the status of one check of one node in check --json output.
status_of() {
  python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(next(c["status"] for n in r["nodes"] if n["name"] == sys.argv[2] for c in n["checks"] if c["id"] == sys.argv[3]))' "$@"
}

summary_of() {
  python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
print(next(c["summary"] for n in r["nodes"] if n["name"] == sys.argv[2] for c in n["checks"] if c["id"] == sys.argv[3]))' "$@"
}

phase_check() {
  local out code t0=$SECONDS
  log_step "cluster check: an unknown host key is refused"
  code=0
  out=$(hf cluster check --inventory "$IT_DIR/cluster.toml" --json 2>&1 >"$IT_DIR/check0.json") || code=$?
  check "check exits 1 with halo3's host key unknown (got $code)" test "$code" -eq 1
  check "halo3's ssh check fails" test "$(status_of "$IT_DIR/check0.json" halo3 ssh)" = fail
  check "the summary quotes ssh's refusal" contains "$(summary_of "$IT_DIR/check0.json" halo3 ssh)" "host key is known for ${IP[halo3]} and you have requested strict checking"
  check "halo1 and halo2 were reached" test "$(status_of "$IT_DIR/check0.json" halo2 ssh)" = ok
  printf '%s %s\n' "${IP[halo3]}" "$(cut -d' ' -f1,2 "$IT_DIR/halo3.hostkey")" >>"$IT_DIR/known_hosts"

  log_step "cluster check: a changed versions.env on halo2, libggml0-backend-rpc removed from halo3"
  on halo2 sed -i 's/^LLAMA_MODEL=.*/LLAMA_MODEL=\/models\/other.gguf/' /home/halo/versions.env
  as_root_on halo3 dpkg -r --force-depends libggml0-backend-rpc >/dev/null 2>&1
  code=0
  hf cluster check --inventory "$IT_DIR/cluster.toml" --json >"$IT_DIR/check1.json" 2>"$IT_DIR/check1.err" || code=$?
  T[check]=$((SECONDS - t0))
  check "check exits 1 on the planted differences (got $code)" test "$code" -eq 1
  check "halo2's versions-env fails" test "$(status_of "$IT_DIR/check1.json" halo2 versions-env)" = fail
  check "… saying it differs from the head's" contains "$(summary_of "$IT_DIR/check1.json" halo2 versions-env)" "differs from halo1's"
  check "halo3's packages fail" test "$(status_of "$IT_DIR/check1.json" halo3 packages)" = fail
  check "… naming the package" contains "$(summary_of "$IT_DIR/check1.json" halo3 packages)" "libggml0-backend-rpc absent here, 0.27"
  check "halo1's versions-env is the reference and passes" test "$(status_of "$IT_DIR/check1.json" halo1 versions-env)" = ok
  check "the nodes reach each other's engine ports" test "$(status_of "$IT_DIR/check1.json" halo1 ports)" = ok
  check "halo2 reaches the head's API port (nothing listens yet)" contains "$(summary_of "$IT_DIR/check1.json" halo2 ports)" "halo1 ${IP[halo1]}:$API_PORT reachable (nothing listens yet)"
  check "the clock is measured" contains "$(summary_of "$IT_DIR/check1.json" halo2 clock)" "half the SSH round trip"
  check "the link check reads the MTU at both ends" contains "$(summary_of "$IT_DIR/check1.json" halo2 link)" "the same at the other ends"
  check "doctor ran on the node through its haloforge" contains "$(summary_of "$IT_DIR/check1.json" halo2 doctor)" "haloforge"
  check "the engine binaries are found (ggml-rpc-server in /usr/libexec)" contains "$(summary_of "$IT_DIR/check1.json" halo2 engine)" "/usr/libexec/x86_64-linux-gnu/llama/bin/ggml-rpc-server"
  out=$(hf cluster check --inventory "$IT_DIR/cluster.toml" 2>&1) || true
  printf '%s\n' "$out" | sed -n '1,200p' | grep -E '^(halo|\[✗\]|    |!)' | head -n 30
  check "the text report prints the fix under a failure" contains "$out" "scp -3 halo1:"

  log_step "cluster check after the fixes passes"
  podman cp "$(ctr halo1):/home/halo/versions.env" "$IT_DIR/head-versions.env"
  podman cp "$IT_DIR/head-versions.env" "$(ctr halo2):/home/halo/versions.env"
  as_root_on halo2 chown halo:halo /home/halo/versions.env
  as_root_on halo3 bash -c 'dpkg -i /var/cache/haloforge-it/libggml0-backend-rpc_*.deb >/dev/null'
  code=0
  out=$(hf cluster check --inventory "$IT_DIR/cluster.toml" 2>&1) || code=$?
  check "check exits 0 once fixed (got $code)" test "$code" -eq 0
  # shellcheck disable=SC2016 # $1 belongs to the inner shell
  check "no check fails" bash -c '! grep -q "^\[✗\]" <<<"$1"' _ "$out"
  hf cluster check --inventory "$IT_DIR/cluster.toml" --json >"$IT_DIR/check2.json" 2>/dev/null || true
  check "--json has the DESIGN shape: nodes[].checks[].id/status/summary/fix" python3 -c 'import json,sys
r = json.load(open(sys.argv[1]))
assert [n["name"] for n in r["nodes"]] == ["halo1", "halo2", "halo3"]
for n in r["nodes"]:
    assert n["checks"] and all(set(c) >= {"id", "status", "summary", "fix"} for c in n["checks"])' "$IT_DIR/check2.json"
}

phase_refusals() {
  log_step "cluster up refuses what it must"
  local code=0 out
  out=$(hf cluster up --inventory "$IT_DIR/cluster.toml" --api-host 0.0.0.0 2>&1) || code=$?
  check "a wildcard bind without --allow-wildcard exits 2 (got $code)" test "$code" -eq 2
  check "… naming the advisory" contains "$out" "GHSA-j8rj-fmpv-wcxw"
  out=$(hf cluster up --inventory "$IT_DIR/cluster.toml" --dry-run 2>&1)
  check "the dry run prints the worker command exactly" contains "$out" "env GGML_VK_VISIBLE_DEVICES=0 ggml-rpc-server -H ${IP[halo2]} -p $RPC_PORT -c"
  check "the dry run prints the head command exactly" contains "$out" "llama-server -m /home/halo/tiny.gguf --host ${IP[halo1]} --port $API_PORT --rpc ${IP[halo2]}:$RPC_PORT,${IP[halo3]}:$RPC_PORT -ngl 999"
}

phase_up_fails() {
  log_step "cluster up with halo3 lacking the RPC backend fails with its log, and stops the rest"
  local code=0 out t0=$SECONDS
  as_root_on halo3 dpkg -r --force-depends libggml0-backend-rpc >/dev/null 2>&1
  out=$(hf cluster up --inventory "$IT_DIR/cluster.toml" 2>&1) || code=$?
  printf '%s\n' "$out" | tail -n 15
  check "up exits 1 (got $code)" test "$code" -eq 1
  check "it names the failing service and node" contains "$out" "rpc-server on halo3"
  check "it shows the server's own words" contains "$out" "RPC backend"
  check "it stopped halo2's ggml-rpc-server again" contains "$out" "stopped again: rpc-server on halo3, rpc-server on halo2"
  check "nothing runs on halo2 afterwards" bash -c "! podman exec $(ctr halo2) pgrep -f ggml-rpc-server"
  as_root_on halo3 bash -c 'dpkg -i /var/cache/haloforge-it/libggml0-backend-rpc_*.deb >/dev/null'
  T[up_fail]=$((SECONDS - t0))
}

phase_up() {
  log_step "cluster up --engine rpc: real ggml-rpc-server on two workers, llama-server --rpc on the head"
  local code=0 out t0=$SECONDS n
  out=$(hf cluster up --inventory "$IT_DIR/cluster.toml" 2>&1) || code=$?
  T[up]=$((SECONDS - t0))
  printf '%s\n' "$out"
  check "up exits 0 (got $code, ${T[up]}s)" test "$code" -eq 0
  check "it waited for each worker's port from the head" contains "$out" "${IP[halo3]}:$RPC_PORT reachable from halo1"
  check "the serve state machine said ready" contains "$out" "✓ ready in"
  # shellcheck disable=SC2016 # $0..$3 belong to the inner shell
  check "the head saw both workers' devices through RPC before serving" \
    bash -c 'grep -q "the head sees RPC0: $1:$3" <<<"$0" && grep -q "the head sees RPC1: $2:$3" <<<"$0"' "$out" "${IP[halo2]}" "${IP[halo3]}" "$RPC_PORT"
  for n in halo2 halo3; do
    check "$n's ggml-rpc-server listens on its cluster address only" \
      bash -c "podman exec $(ctr "$n") ss -ltnH | awk '{print \$4}' | grep -qx '${IP[$n]}:$RPC_PORT'"
    check "… and not on a wildcard" bash -c "! podman exec $(ctr "$n") ss -ltnH | awk '{print \$4}' | grep -Eq '^(0\\.0\\.0\\.0|\\*|\\[::\\]):$RPC_PORT\$'"
  done
  log_step "the head answers a completion across the RPC workers"
  local resp
  resp=$(curl -fsS --max-time 120 "http://${IP[halo1]}:$API_PORT/v1/completions" -H 'Content-Type: application/json' \
    -d '{"prompt": "Hello", "max_tokens": 8}' 2>&1) || true
  printf '%s\n' "${resp:0:400}"
  check "/v1/completions returns choices" python3 -c 'import json,sys; r = json.loads(sys.argv[1]); assert r["choices"] and r["usage"]["completion_tokens"] > 0' "$resp"
  for n in halo2 halo3; do
    check "$n's ggml-rpc-server log shows the head's connection" \
      bash -c "podman exec $(ctr "$n") cat /home/halo/.local/state/haloforge/cluster/rpc-server.log | grep -q 'Accepted client connection'"
  done
}

phase_down() {
  log_step "cluster down stops everything and leaves nothing"
  local code=0 out t0=$SECONDS n procs
  out=$(hf cluster down --inventory "$IT_DIR/cluster.toml" 2>&1) || code=$?
  T[down]=$((SECONDS - t0))
  printf '%s\n' "$out"
  check "down exits 0 (got $code)" test "$code" -eq 0
  check "down stopped llama-server on the head" contains "$out" "halo1: llama-server: stopped"
  for n in "${NODES[@]}"; do
    procs=$(podman exec "$(ctr "$n")" ps -eo comm= | grep -E 'ggml-rpc-server|llama-server|rpc-server' || true)
    check "no engine process left on $n (ps)" test -z "$procs"
    check "no process of the login user left on $n" bash -c "! podman exec $(ctr "$n") pgrep -u halo"
  done
  out=$(hf cluster down --inventory "$IT_DIR/cluster.toml" 2>&1) || code=$?
  check "a second down finds nothing to stop" contains "$out" "halo2: nothing of haloforge's was running"
}

main() {
  need_root
  trap cleanup EXIT
  log_step "Setup (packages, podman config, cluster image, network, three sshd nodes, keys)"
  install_packages
  configure_podman
  command -v ssh >/dev/null || run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssh-client
  command -v curl >/dev/null || run env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends curl
  setup
  T[setup]=$((SECONDS - START))

  phase_check
  phase_refusals
  phase_up_fails
  phase_up
  phase_down

  log_info "timings: setup ${T[setup]}s, check ${T[check]:-?}s, failing up ${T[up_fail]:-?}s, up ${T[up]:-?}s, down ${T[down]:-?}s, total $((SECONDS - START))s"
  if ((FAILS)); then
    die "integration-cluster: $FAILS check(s) failed in $((SECONDS - START))s"
  fi
  log_ok "integration-cluster: every check passed in $((SECONDS - START))s"
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  main "$@"
fi
