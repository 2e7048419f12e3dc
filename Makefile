# pmlab — persistent-memory systems toolkit.
#
#   make demo    the main job: build, then `pmlab reproduce --quick` → results/REPORT.md
#   make test    every test suite (Rust workspace, C/MPI suite)
#   make bench   speed benchmarks (figures go to results/bench/)
#   make deps    install what a fresh Debian machine lacks (idempotent; needs root)

SHELL := /bin/bash
CARGO ?= cargo
RESULTS ?= results
PMLAB := target/release/pmlab

# Debian packages the project needs: compilers and CMake for the C parts, MPICH and libpmem
# for nvcache, ISA-L for pmec's side-by-side comparison, parallel HDF5 as an unmodified
# MPI-IO client.
APT_PACKAGES := build-essential cmake pkg-config libisal-dev libisal2 mpich libmpich-dev \
                libpmem-dev libhdf5-mpich-dev hdf5-tools

.PHONY: all deps build demo test test-rust bench fuzz lint clean

all: build

deps:
	@missing=""; for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "deps: installing$$missing"; \
	  if [ "$$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi; \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	else echo "deps: all Debian packages present"; fi
	@command -v $(CARGO) >/dev/null || { echo "deps: cargo not found (install Rust with rustup)"; exit 1; }
	@$(CARGO) fetch --locked -q 2>/dev/null || $(CARGO) fetch -q

build: deps
	$(CARGO) build --release --workspace

demo: build
	$(PMLAB) reproduce --quick --out $(RESULTS)
	@echo "demo: report at $(RESULTS)/REPORT.md"

test: deps test-rust

test-rust:
	$(CARGO) test --release --workspace

bench: build
	@mkdir -p $(RESULTS)/bench
	$(CARGO) bench -p pmsim --bench replay_speed -- 1000000 2>/dev/null | tee $(RESULTS)/bench/replay_speed.txt
	$(CARGO) bench -p pmsim --bench replay_speed -- 50000000 2>/dev/null | tee -a $(RESULTS)/bench/replay_speed.txt

fuzz:
	$(CARGO) run --release -p pmtrace --example fuzz -- --seconds 60

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
	rm -rf $(RESULTS)
