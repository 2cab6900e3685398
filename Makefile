# haloforge: `make test` installs what the tests need (as root, via apt-get)
# and runs every suite; `make bench` runs the benchmarks the issues name.
SHELL := /bin/bash
.SHELLFLAGS := -Eeuo pipefail -c
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO ?= go

# Debian packages the suites use: shell linting and bats, tmux for the TUI
# end-to-end test, util-linux's `script` as the raw-pty baseline, and real
# podman + distrobox for the integration test; Debian's OCI registry
# for the real-server tests of `pins status` (pins/upstream/upstreamtest); patch for the
# host fixes' diff test (the chroot test's grub, systemd and systemd-boot go into its own
# debootstrap root); rpm to read the release .rpm (dist-test); ninja-build, the real ninja whose
# [N/M] status line the runner's progress tests read.
APT_PKGS := git python3 python3-venv python3-wheel-whl python3-packaging shellcheck bats tmux bsdutils podman distrobox runc debootstrap sudo uidmap fuse-overlayfs docker-registry patch rpm ninja-build
# Commands that prove each package is there, so apt-get runs only when needed.
APT_PROBES := git python3 shellcheck bats tmux script podman distrobox runc debootstrap sudo newuidmap docker-registry patch rpm ninja

# The release tool, pinned: `go run` builds it from the Go module proxy (checksummed by
# sum.golang.org) into the build cache, apart from the project's own go.mod.
GORELEASER ?= $(GO) run github.com/goreleaser/goreleaser/v2@v2.15.1

# What `haloforge --version` names for make build: the checkout's commit, whether it had
# uncommitted changes, and the build time (a release stamps the same through .goreleaser.yaml).
BUILD_LDFLAGS = -X main.commit=$(shell git rev-parse HEAD 2>/dev/null) \
  -X main.treeState=$(shell if [ -n "$$(git status --porcelain 2>/dev/null)" ]; then echo dirty; else echo clean; fi) \
  -X main.date=$(shell date -u +%Y-%m-%dT%H:%M:%SZ)

FUZZTIME ?= 5s
SHFMT_FLAGS ?= -i 2 -ci -bn

.PHONY: test deps vet unit scripts-lint bats fuzz-short integration integration-distro integration-cluster integration-verify hostfix dist dist-test bench screenshots screenshot-serve build clean

test: deps vet unit scripts-lint bats fuzz-short integration integration-distro integration-cluster integration-verify hostfix dist-test
	@echo "make test: all suites passed"

build:
	$(GO) build -ldflags '$(BUILD_LDFLAGS)' -o bin/haloforge ./cmd/haloforge

# The release artefacts as a snapshot (no tag needed, nothing published): dist/ holds the
# tar.gz, the .deb, the .rpm and checksums.txt (.goreleaser.yaml). goreleaser v2.15.1 drops
# the commit when `git ls-remote --get-url` fails, and never sets the tree state when no tag
# exists; so a checkout without a remote (a fresh `git init`, a CI copy) names the project's
# URL for this run (git reads no network for it), and an untagged one names v0.0.0.
dist:
	@if ! git ls-remote --get-url >/dev/null 2>&1; then \
	  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=remote.origin.url GIT_CONFIG_VALUE_0=https://github.com/haloforge/haloforge; \
	fi; \
	if ! git describe --tags >/dev/null 2>&1; then export GORELEASER_CURRENT_TAG=v0.0.0; fi; \
	echo "$(GORELEASER) release --snapshot --clean"; $(GORELEASER) release --snapshot --clean

# The packages proven: checksums, the .rpm read with rpm, the .deb installed with dpkg -i
# into a fresh Debian container, and the installed binary run (as root: podman).
dist-test: dist
	scripts/tests/dist.sh

deps:
	@missing=""; for c in $(APT_PROBES); do command -v $$c >/dev/null 2>&1 || missing="$$missing $$c"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing test dependencies (missing:$$missing)"; \
	  if [ "$$(id -u)" != 0 ]; then echo "make test needs root to apt-get install: $(APT_PKGS)" >&2; exit 1; fi; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq --no-install-recommends $(APT_PKGS) >/dev/null; \
	fi
	$(GO) mod download

vet:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed: $$unformatted" >&2; exit 1; fi
	$(GO) vet ./...

unit:
	$(GO) tool gotestsum --format pkgname-and-test-fails -- -count=1 -timeout 15m ./...

scripts-lint:
	@files=$$(git ls-files 'scripts/*.sh' 'scripts/*.bash' 'toolbox/*.sh' 'tui/demo/*.sh' 'tui/demo/**/*.sh' 2>/dev/null); \
	if [ -n "$$files" ]; then shellcheck -x $$files && $(GO) tool shfmt $(SHFMT_FLAGS) -d $$files; fi; \
	bats_files=$$(git ls-files 'scripts/tests/*.bats'); \
	if [ -n "$$bats_files" ]; then shellcheck -x $$bats_files; fi

bats:
	@if ls scripts/tests/*.bats >/dev/null 2>&1; then bats scripts/tests; else echo "no bats suites"; fi

# A short run of every fuzz target, so a regression in a parser shows here.
fuzz-short:
	FUZZTIME=$(FUZZTIME) GO=$(GO) .ci/fuzz-short.sh

# Real podman + distrobox: creates a box and runs the tools step inside it.
integration: build
	@if [ -x scripts/tests/integration.sh ]; then scripts/tests/integration.sh; else echo "no integration suite yet"; fi

# Real Debian sid llama.cpp in a real distrobox: the llamacpp-distro track end to end on
# lavapipe (debootstrapped sid image cached as localhost/haloforge-sid:<recipe hash>).
integration-distro: build
	HALOFORGE_BIN=$(CURDIR)/bin/haloforge scripts/tests/integration-distro.sh

# Real SSH and llama.cpp RPC across three sid containers on a private podman network:
# haloforge cluster check (planted differences found, then passing), up --engine rpc (real
# ggml-rpc-server on two workers, llama-server --rpc on the head answers), down (nothing left).
integration-cluster: build
	HALOFORGE_BIN=$(CURDIR)/bin/haloforge scripts/tests/integration-cluster.sh

# Real llama-server (Debian sid, in the cluster proof's node image, so no image of its own) on
# its CPU and Vulkan (lavapipe) backends: haloforge verify records a reference on the CPU,
# says right for Vulkan, WRONG OUTPUT for the same GGUF with one matrix perturbed, not verified
# for the random model's known answers; prints the distances the tolerance is derived from.
integration-verify: build
	HALOFORGE_BIN=$(CURDIR)/bin/haloforge scripts/tests/integration-verify.sh

# Real bootloader tools in debootstrap chroots (GRUB's update-grub and grub-mkconfig,
# systemd-boot with kernel-install and bootctl): doctor --plan, --apply, --rollback (as root).
hostfix: build
	HALOFORGE_BIN=$(CURDIR)/bin/haloforge scripts/tests/hostfix-chroot.sh

bench: deps
	$(GO) test -p 1 -run='^$$' -bench=. -benchtime=1x -timeout 30m ./...
	HALOFORGE_PERF=1 $(GO) test -count=1 -run 'TestTmuxThroughput' -v ./cmd/haloforge

# Screenshots for the docs, from real `haloforge demo` runs (asciinema, svg-term-cli, rsvg-convert).
screenshots: build
	@command -v asciinema >/dev/null && command -v rsvg-convert >/dev/null || { \
	  export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq asciinema librsvg2-bin fonts-dejavu-core tmux >/dev/null; }
	@[ -x /tmp/svgterm/node_modules/.bin/svg-term ] || npm install --silent --prefix /tmp/svgterm svg-term-cli
	bash tui/demo/screenshots/make.sh

# TUTORIAL's "serve and measure" screenshots, from the real serve proof of integration-distro
# (the sid box, llama-server on lavapipe) in a fixed-size tmux pane: svg-term-cli, rsvg-convert.
screenshot-serve: build
	@command -v rsvg-convert >/dev/null || { \
	  export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq librsvg2-bin fonts-dejavu-core tmux >/dev/null; }
	@[ -x /tmp/svgterm/node_modules/.bin/svg-term ] || npm install --silent --prefix /tmp/svgterm svg-term-cli
	HALOFORGE_BIN=$(CURDIR)/bin/haloforge HF_IT_SCREENSHOT=$(CURDIR)/tui/demo/proof scripts/tests/integration-distro.sh

clean:
	rm -rf bin dist
