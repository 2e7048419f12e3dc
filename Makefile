# pmlab — persistent-memory systems toolkit.
#
#   make demo    the main job: build, then `pmlab reproduce --quick` → results/REPORT.md
#   make test    every test suite (Rust workspace, C/MPI suite)
#   make bench   speed benchmarks (figures go to results/bench/); `make bench-ec` only pmec
#                against ISA-L (Debian's 2.30 and, from ../shared/anchors, 2.32.1)
#   make crash-check  every software-persistence workload x 3 presets (and x the buffered orderings
#                     epoch, broi on nvm-ppo), the ten PMWeaver Table II workloads x both
#                     PM-support engines with PMWeaver on, every hardware-TX workload x every
#                     logging scheme (and each scheme with a 64 KiB log that wraps), 1000
#                     crash points each
#   make deps    install what a fresh Debian machine lacks (idempotent; needs root)
#   make install PREFIX=/usr/local   pmlab, libpmec (+ pmec.h, pmec.pc), the ISA-L shim as
#                PREFIX/lib/pmec-isal/libisal.so.2, libnvcache-mpich.so and libnvcache-openmpi.so,
#                nvcache-recover, nvcache-run
#   make uninstall PREFIX=...        removes what install put there (and the folders it made)

SHELL := /bin/bash
CARGO ?= cargo
RESULTS ?= results
PMLAB := target/release/pmlab

# Debian packages the project needs: compilers and CMake for the C parts, MPICH, Open MPI and
# libpmem for nvcache, ISA-L for pmec's side-by-side comparison (and nasm + autotools to build a
# newer ISA-L release from ../shared/anchors for `make bench`), and unmodified MPI-IO clients:
# parallel HDF5 on both MPIs, and on Open MPI (Debian builds them on it only) parallel h5py and
# PnetCDF. Installing Open MPI switches the mpicc/mpiexec alternatives to it: nothing here uses
# them, every build and test names mpicc.mpich / mpiexec.openmpi etc.
APT_PACKAGES := build-essential cmake pkg-config libisal-dev libisal2 mpich libmpich-dev \
                openmpi-bin libopenmpi-dev libpmem-dev libhdf5-mpich-dev libhdf5-openmpi-dev \
                hdf5-tools python3-h5py-mpi python3-mpi4py libpnetcdf-dev \
                nasm autoconf automake libtool

.PHONY: all deps build build-nvcache isal-anchor bench-ec demo test test-rust test-scripts test-nvcache test-install test-readme bench bench-instr fuzz lint clean crash-check install built uninstall

# nvcache is built once per MPI (the library is bound to the MPI it was compiled for):
# nvcache/build for MPICH (the default everywhere: benchmarks, report), nvcache/build-openmpi.
NVCACHE_BUILD := nvcache/build
NVCACHE_BUILD_OPENMPI := nvcache/build-openmpi

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

build: deps build-nvcache
	$(CARGO) build --release --workspace
	@mkdir -p target/pmec-isal
	ln -sf ../release/libpmec_isal.so target/pmec-isal/libisal.so.2
	$(CC) -O2 -std=c11 -Wall -Wextra -Werror -o target/percall crates/pmec/bench/percall.c -lisal

# ISA-L 2.32.1 (GFNI kernels) from ../shared/anchors, built into target/ for benchmarks only
# (never part of pmlab); nothing happens where the tarball is absent.
ISAL_ANCHOR := ../shared/anchors/isa-l-2.32.1.tar.gz
ISAL_NEW := target/isa-l-2.32.1/inst/lib
isal-anchor: deps
	@if [ -f $(ISAL_NEW)/libisal.so.2 ]; then echo "isal-anchor: $(ISAL_NEW) built"; \
	elif [ -f $(ISAL_ANCHOR) ]; then \
	  mkdir -p target && rm -rf target/isa-l-2.32.1 && tar -xzf $(ISAL_ANCHOR) -C target/ && \
	  cd target/isa-l-2.32.1 && ./autogen.sh >/dev/null && ./configure -q --prefix=$$PWD/inst >/dev/null && \
	  $(MAKE) -s -j2 >/dev/null && $(MAKE) -s install >/dev/null && echo "isal-anchor: built $(ISAL_NEW)"; \
	else echo "isal-anchor: $(ISAL_ANCHOR) absent, comparing with the system ISA-L only"; fi

# pmec against every ISA-L at hand on the path ISA-L clients take (one stripe per
# ec_encode_data call, the `percall` client run on each libisal.so.2), and the batch API
# against the newest ISA-L in the same process.
PERCALL_POINTS := 8:4:1024 24:4:1024 48:4:1024 8:4:4096
bench-ec: build isal-anchor
	@mkdir -p $(RESULTS)/bench
	@libs="--lib isal-2.30=$$(dirname $$(ldconfig -p | sed -n 's/.*libisal.so.2 (libc6,x86-64) => //p' | head -1))"; \
	against=isal-2.30; newest=; \
	if [ -f $(ISAL_NEW)/libisal.so.2 ]; then libs="$$libs --lib isal-2.32.1=$(ISAL_NEW)"; against=isal-2.32.1; newest=--isal=$(ISAL_NEW)/libisal.so.2; fi; \
	{ echo "## single call, out of cache"; \
	  $(PMLAB) ec percall $$libs --lib pmec=target/pmec-isal --against $$against $(PERCALL_POINTS); \
	  echo; echo "## single call, in cache"; \
	  $(PMLAB) ec percall --in-cache $$libs --lib pmec=target/pmec-isal --against $$against $(PERCALL_POINTS); \
	  echo; echo "## single call, out of cache: DIALGA's layers (PMEC_STRATEGY; auto adds the lone-stripe schedules)"; \
	  $(PMLAB) ec percall --lib vanilla=target/pmec-isal,PMEC_STRATEGY=vanilla --lib +sw=target/pmec-isal,PMEC_STRATEGY=sw \
	    --lib +bf=target/pmec-isal,PMEC_STRATEGY=bf --lib nohw=target/pmec-isal,PMEC_STRATEGY=nohw \
	    --lib auto=target/pmec-isal --against vanilla 8:4:1024 24:4:1024; \
	  if [ -f $(ISAL_NEW)/libisal.so.2 ]; then for pair in avx512:avx512 avx2:avx2 avx2_gfni:avx2-gfni; do \
	    e=$${pair%%:*}; isa=$${pair##*:}; \
	    echo; echo "## single call, another host emulated: ISA-L 2.32.1's $$e kernel (PERCALL_ENTRY) against pmec capped at $$isa (PMEC_ISA)"; \
	    for c in "" --in-cache; do $(PMLAB) ec percall $$c --lib isal-2.32.1-$$e=$(ISAL_NEW),PERCALL_ENTRY=$$e \
	      --lib pmec-$$isa=target/pmec-isal,PMEC_ISA=$$isa --against isal-2.32.1-$$e $(PERCALL_POINTS); done; \
	  done; fi; \
	  echo; echo "## batch API (64 stripes per call) and single calls in one process, against $$against"; \
	  $(PMLAB) ec bench $$newest --reps 5; \
	  $(PMLAB) ec bench $$newest --reps 5 --batch 1; } | tee $(RESULTS)/bench/pmec_isal.md

build-nvcache: deps
	cmake -S nvcache -B $(NVCACHE_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVCACHE_MPI=mpich -DNVCACHE_REQUIRE_CLIENTS=ON >/dev/null
	cmake --build $(NVCACHE_BUILD) -j2
	cmake -S nvcache -B $(NVCACHE_BUILD_OPENMPI) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNVCACHE_MPI=openmpi -DNVCACHE_REQUIRE_CLIENTS=ON >/dev/null
	cmake --build $(NVCACHE_BUILD_OPENMPI) -j2

demo: build
	$(PMLAB) reproduce --quick --out $(RESULTS)
	@echo "demo: report at $(RESULTS)/REPORT.md"

test: deps test-rust test-scripts test-nvcache test-install test-readme

# Build first: pmec's C-API and LD_PRELOAD tests use the shared libraries the build leaves in
# target/release.
# Then the simulator's tests once more with debug assertions: its hot-path tables skip bounds
# checks in release builds and check every index in debug builds (crates/pmsim/src/dense.rs).
test-rust:
	$(CARGO) build --release --workspace
	PMEC_REQUIRE_ISAL=1 $(CARGO) test --release --workspace
	$(CARGO) test -p pmsim

# The DRAM-simulator comparison script against peer outputs of known shape and a pmlab run;
# the ISA-L client's named-kernel mode (make bench-ec's non-GFNI comparison) against parity;
# three seconds of the trace-parser fuzzer (`make fuzz` runs a minute), so that it stays runnable.
test-scripts: build
	python3 scripts/test_dram_peers.py
	tests/percall_entry.sh
	$(CARGO) run --release -q -p pmtrace --example fuzz -- --seconds 3 --crash-file target/pmtrace-fuzz-crash.hex

test-nvcache: build-nvcache
	ctest --test-dir $(NVCACHE_BUILD) --output-on-failure
	ctest --test-dir $(NVCACHE_BUILD_OPENMPI) --output-on-failure

# README's results block against a fresh run of the simulated sections, and its plug-in names
# against `pmlab plugins` (about a minute).
test-readme: build
	tests/readme_results.sh

# Installs into a fresh temporary prefix, runs README's usage commands and the installed tools
# from there, and checks that uninstall leaves the prefix empty.
test-install: build
	tests/install.sh

# What `make install` puts under PREFIX (DESTDIR for staged installs). The manifest lists every
# file and every folder install created, so uninstall removes exactly those.
PREFIX ?= /usr/local
DESTDIR ?=
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
# `sudo make install` after `make build`: root's PATH often has no cargo, and then install
# takes what `make build` made (checked: every artifact must exist) instead of building again.
INSTALL_FROM := $(if $(shell command -v $(CARGO) 2>/dev/null),build,built)
built:
	@for f in target/release/pmlab target/release/libpmec.so target/release/libpmec.a \
	  target/release/libpmec_isal.so $(NVCACHE_BUILD)/libnvcache.so $(NVCACHE_BUILD)/nvcache-recover \
	  $(NVCACHE_BUILD_OPENMPI)/libnvcache.so; do \
	  [ -e "$$f" ] || { echo "install: $(CARGO) not on PATH and $$f not built: run make build first"; exit 1; }; \
	done; echo "install: $(CARGO) not on PATH: installing what make build made"

install: $(INSTALL_FROM)
	@set -e; umask 022; p="$(DESTDIR)$(PREFIX)"; m="$$p/share/pmlab/install-manifest"; \
	old=""; [ ! -f "$$m" ] || old=$$(cat "$$m"); \
	sedprefix=$$(printf '%s\n' "$(PREFIX)" | sed 's/[\\&|]/\\&/g'); pcprefix=$$(printf '%s\n' "$$sedprefix" | sed 's/ /\\\\ /g'); \
	made=""; files=""; \
	manifest() { [ -d "$$p/share/pmlab" ] || return 0; \
	  { for f in $$files; do echo "file $$f"; done; echo "file share/pmlab/install-manifest"; \
	    for d in $$made; do echo "dir $$d"; done; echo "$$old"; } | awk 'NF && !seen[$$0]++' > "$$m.new"; \
	  mv -f "$$m.new" "$$m"; }; \
	trap 'rc=$$?; [ $$rc -eq 0 ] || { manifest; echo "install: failed; what it installed is in $$m (make uninstall removes it)"; }' EXIT; \
	for d in share share/pmlab bin lib lib/pkgconfig lib/pmec-isal include share/pmlab/configs share/pmlab/examples; do \
	  [ -d "$$p/$$d" ] || { install -d -m 755 "$$p/$$d"; made="$$made $$d"; }; \
	done; \
	put() { install -m "$$1" "$$2" "$$p/$$3"; files="$$files $$3"; }; \
	put 755 target/release/pmlab bin/pmlab; \
	put 755 $(NVCACHE_BUILD)/nvcache-recover bin/nvcache-recover; \
	sed "s|@LIBDIR@|$$sedprefix/lib|" nvcache/tools/nvcache-run > "$$p/bin/nvcache-run"; chmod 755 "$$p/bin/nvcache-run"; files="$$files bin/nvcache-run"; \
	put 644 $(NVCACHE_BUILD)/libnvcache.so lib/libnvcache-mpich.so; \
	put 644 $(NVCACHE_BUILD_OPENMPI)/libnvcache.so lib/libnvcache-openmpi.so; \
	ln -sf libnvcache-mpich.so "$$p/lib/libnvcache.so"; files="$$files lib/libnvcache.so"; \
	put 644 target/release/libpmec.so lib/libpmec.so.$(VERSION); \
	ln -sf libpmec.so.$(VERSION) "$$p/lib/libpmec.so.0"; ln -sf libpmec.so.0 "$$p/lib/libpmec.so"; files="$$files lib/libpmec.so.0 lib/libpmec.so"; \
	put 644 target/release/libpmec.a lib/libpmec.a; \
	put 644 target/release/libpmec_isal.so lib/pmec-isal/libisal.so.2; \
	ln -sf libisal.so.2 "$$p/lib/pmec-isal/libisal.so"; files="$$files lib/pmec-isal/libisal.so"; \
	put 644 crates/pmec/include/pmec.h include/pmec.h; \
	sed "s|@PREFIX@|$$pcprefix|; s|@VERSION@|$(VERSION)|" crates/pmec/pmec.pc.in > "$$p/lib/pkgconfig/pmec.pc"; chmod 644 "$$p/lib/pkgconfig/pmec.pc"; files="$$files lib/pkgconfig/pmec.pc"; \
	for c in configs/*.toml; do put 644 "$$c" "share/pmlab/$$c"; done; \
	for e in docs/examples/*; do put 644 "$$e" "share/pmlab/examples/$${e##*/}"; done; \
	manifest; \
	echo "install: $$(echo $$files | wc -w) files under $$p (manifest $$m)"; \
	echo "install: ISA-L programs run on pmec with LD_LIBRARY_PATH=$(PREFIX)/lib/pmec-isal; MPI-IO jobs on nvcache with nvcache-run"

uninstall:
	@p="$(DESTDIR)$(PREFIX)"; m="$$p/share/pmlab/install-manifest"; \
	[ -f "$$m" ] || { echo "uninstall: no manifest at $$m (nothing installed there)"; exit 0; }; \
	dirs=$$(sed -n 's/^dir //p' "$$m" | sort -ru); \
	for f in $$(sed -n 's/^file //p' "$$m"); do rm -f "$$p/$$f"; done; \
	for d in $$dirs; do rmdir "$$p/$$d" 2>/dev/null || echo "uninstall: $$p/$$d not empty, kept"; done; \
	echo "uninstall: removed pmlab from $$p"

bench: build
	@# (pipefail: a benchmark that fails fails the target, not only its tee)
	@mkdir -p $(RESULTS)/bench
	set -o pipefail; $(CARGO) bench -p pmsim --bench replay_speed -- 1000000 2>/dev/null | tee $(RESULTS)/bench/replay_speed.txt
	set -o pipefail; $(CARGO) bench -p pmsim --bench replay_speed -- 50000000 2>/dev/null | tee -a $(RESULTS)/bench/replay_speed.txt
	set -o pipefail; $(CARGO) bench -p pmsim --bench ingest_speed 2>/dev/null | tee $(RESULTS)/bench/ingest_speed.txt
	set -o pipefail; $(CARGO) bench -p pmsim --bench full_system_speed -- 2000000 1 2>/dev/null | tee $(RESULTS)/bench/full_system_speed.txt
	set -o pipefail; $(CARGO) bench -p pmsim --bench full_system_speed -- 20000000 1 2>/dev/null | tee -a $(RESULTS)/bench/full_system_speed.txt
	set -o pipefail; $(CARGO) bench -p pmsim --bench full_system_speed -- 2000000 4 2>/dev/null | tee -a $(RESULTS)/bench/full_system_speed.txt
	set -o pipefail; $(CARGO) bench -p pmsim --bench full_system_speed -- 2000000 1 50 2>/dev/null | tee -a $(RESULTS)/bench/full_system_speed.txt
	set -o pipefail; $(CARGO) bench -p pmsim --bench logging_speed 2>/dev/null | tee $(RESULTS)/bench/logging_speed.txt
	set -o pipefail; $(CARGO) bench -p pmsim --bench ordering_speed 2>/dev/null | tee $(RESULTS)/bench/ordering_speed.txt
	set -o pipefail; $(CARGO) bench -p pmsim --bench pm_support_speed 2>/dev/null | tee $(RESULTS)/bench/pm_support_speed.txt
	set -o pipefail; $(CARGO) run --release -q -p pmwork --example gen_speed 2>/dev/null | tee $(RESULTS)/bench/pmwork_gen_speed.txt
	set -o pipefail; $(CARGO) bench -p pmec --bench ec 2>/dev/null | tee $(RESULTS)/bench/pmec.txt
	$(MAKE) --no-print-directory bench-ec
	set -o pipefail; nvcache/bench/run_bench.sh $(NVCACHE_BUILD) "" quick | tee $(RESULTS)/bench/nvcache.csv

# Instructions per replayed request (valgrind callgrind): unlike wall-clock speed, stable on a
# shared machine, so it is the figure to optimise the replay against. PRESET=nvm-ppo by default.
PRESET ?= nvm-ppo
bench-instr: build
	@command -v valgrind >/dev/null || { echo "bench-instr: valgrind not installed"; exit 1; }
	@bin=$$($(CARGO) bench -p pmsim --bench replay_speed --no-run 2>&1 | sed -n 's/.*(\(target[^)]*\)).*/\1/p' | tail -1); \
	a=$$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $$bin 100000 $(PRESET) --runs=1 2>&1 | sed -n 's/.*Collected : //p' | tr -d ,); \
	b=$$(valgrind --tool=callgrind --callgrind-out-file=/dev/null $$bin 200000 $(PRESET) --runs=1 2>&1 | sed -n 's/.*Collected : //p' | tr -d ,); \
	echo "replay $(PRESET): $$(( (b - a) / 100000 )) instructions per request"

fuzz:
	$(CARGO) run --release -p pmtrace --example fuzz -- --seconds 60

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

clean:
	$(CARGO) clean
	rm -rf $(RESULTS) $(NVCACHE_BUILD) $(NVCACHE_BUILD_OPENMPI)

# Every workload with a software persistence library, under the three papers' presets, and
# every hardware-transaction workload under each hardware logging scheme (nvm-lalea), cut at
# 1000 crash points each and checked by its recovery oracle (several minutes).
CRASH_POINTS ?= 1000
BUFFERED_ORDERINGS := epoch broi
LOGGING_SCHEMES := redu lad lalea blom lalea+blom lalea-lad
BMO_ENGINES := enc-bmt dedup
# Direct-mapped 1 KiB caches, so that lines of open hardware transactions are evicted and each
# logging scheme's no-steal path is cut through (the presets' caches never evict them). With ADR
# off as well, write-backs of shared lines wait for the WPQ and merge there: the case where a
# merge into the oldest of a line's entries lost a fenced store. With BROI as well, the model
# holds a transaction's old eviction while the logging engine writes the line in place: the case
# where the eviction landed after the in-place update. On shared-log under a buffered ordering,
# the shared tail line leaves the caches while the model holds its write-back: the case where the
# next holder recorded no dependency and its write of the line landed first.
TINY_CACHES := $(foreach s,l1d l2 llc,--set caches.$(s).size_kib=1 --set caches.$(s).ways=1)
# Workloads whose every thread is an RDMA client of the simulated PM (the WHISPER-like ones the
# PPO paper runs remotely, and two PPO micro-benchmarks).
REMOTE_WORKLOADS := ppo-hash ppo-sps tpcc ycsb memcached ctree hashmap-tx
PMWEAVER_WORKLOADS := btree ctree rbtree skiplist hashmap-tx linkedlist hashmap-ll arrayswap tatp tpcc-ll
crash-check: build
	@pmlab=target/release/pmlab; fail=0; \
	for c in pcm-pmweaver nvm-ppo nvm-lalea; do \
	  hw=4; [ $$c = nvm-ppo ] && hw=8; \
	  for w in $$($$pmlab workloads | awk 'NR>1 && $$2!="hwtx" {print $$1}'); do \
	    th=$$($$pmlab workloads | awk -v w=$$w '$$1==w {print $$4}'); [ $$th -gt $$hw ] && th=$$hw; \
	    printf "%-13s %-14s " $$c $$w; \
	    out=$$($$pmlab crash --config $$c --workload $$w --threads $$th --points $(CRASH_POINTS) 2>&1); \
	    rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing" ; [ $$rc -eq 0 ] || fail=1; \
	  done; \
	done; \
	for o in $(BUFFERED_ORDERINGS); do \
	  for w in $$($$pmlab workloads | awk 'NR>1 && $$2!="hwtx" {print $$1}'); do \
	    th=$$($$pmlab workloads | awk -v w=$$w '$$1==w {print $$4}'); [ $$th -gt 8 ] && th=8; \
	    printf "%-24s %-14s " "nvm-ppo ordering=$$o" $$w; \
	    out=$$($$pmlab crash --config nvm-ppo --set controller.ordering=$$o --workload $$w --threads $$th --points $(CRASH_POINTS) 2>&1); \
	    rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing|persist order violated" ; [ $$rc -eq 0 ] || fail=1; \
	  done; \
	done; \
	for o in $(BUFFERED_ORDERINGS); do \
	  for n in sync bsp; do \
	    for w in $(REMOTE_WORKLOADS); do \
	      printf "%-24s %-14s " "4 RDMA clients $$o/$$n" $$w; \
	      out=$$($$pmlab crash --config nvm-ppo --set controller.ordering=$$o --set network.persistence=$$n --workload $$w --threads 4 --remote 4 --points $(CRASH_POINTS) 2>&1); \
	      rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing|persist order violated" ; [ $$rc -eq 0 ] || fail=1; \
	    done; \
	  done; \
	done; \
	for w in $(REMOTE_WORKLOADS); do \
	  printf "%-24s %-14s " "4 RDMA clients bsp 100ns" $$w; \
	  out=$$($$pmlab crash --config nvm-ppo --set controller.ordering=broi --set network.persistence=bsp --set network.latency_ns=100 --workload $$w --threads 4 --remote 4 --points $(CRASH_POINTS) 2>&1); \
	  rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing|persist order violated" ; [ $$rc -eq 0 ] || fail=1; \
	done; \
	for b in $(BMO_ENGINES); do \
	  for w in $(PMWEAVER_WORKLOADS); do \
	    printf "%-24s %-14s " "pcm-pmweaver $$b+pmweaver" $$w; \
	    out=$$($$pmlab crash --config pcm-pmweaver --set controller.bmo=$$b --set controller.predictor=pmweaver --workload $$w --points $(CRASH_POINTS) 2>&1); \
	    rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing" ; [ $$rc -eq 0 ] || fail=1; \
	  done; \
	done; \
	for w in $(PMWEAVER_WORKLOADS); do \
	  printf "%-24s %-14s " "nvm-lalea no ADR, tiny" $$w; \
	  out=$$($$pmlab crash --config nvm-lalea --set controller.adr=false $(TINY_CACHES) --workload $$w --threads 4 --points $(CRASH_POINTS) 2>&1); \
	  rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing" ; [ $$rc -eq 0 ] || fail=1; \
	done; \
	for o in $(BUFFERED_ORDERINGS); do \
	  printf "%-24s %-14s " "nvm-ppo $$o no ADR, tiny" shared-log; \
	  out=$$($$pmlab crash --config nvm-ppo --set controller.ordering=$$o --set controller.adr=false $(TINY_CACHES) --workload shared-log --threads 4 --points $(CRASH_POINTS) 2>&1); \
	  rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing" ; [ $$rc -eq 0 ] || fail=1; \
	done; \
	for l in $(LOGGING_SCHEMES); do \
	  for w in hash-hw queue-hw; do \
	    printf "%-24s %-14s " "broi $$l no ADR, tiny" $$w; \
	    out=$$($$pmlab crash --config nvm-lalea --set controller.logging=$$l --set controller.ordering=broi --set controller.adr=false $(TINY_CACHES) --workload $$w --threads 4 --points $(CRASH_POINTS) 2>&1); \
	    rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing|persist order violated" ; [ $$rc -eq 0 ] || fail=1; \
	  done; \
	done; \
	for l in $(LOGGING_SCHEMES); do \
	  printf "%-24s %-14s " "logging=$$l no ADR, tiny" tatp-hw; \
	  out=$$($$pmlab crash --config nvm-lalea --set controller.logging=$$l --set controller.adr=false $(TINY_CACHES) --workload tatp-hw --points $(CRASH_POINTS) 2>&1); \
	  rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing" ; [ $$rc -eq 0 ] || fail=1; \
	done; \
	for l in $(LOGGING_SCHEMES); do \
	  for w in $$($$pmlab workloads | awk 'NR>1 && $$2=="hwtx" {print $$1}'); do \
	    printf "%-24s %-14s " "nvm-lalea logging=$$l" $$w; \
	    out=$$($$pmlab crash --config nvm-lalea --set controller.logging=$$l --workload $$w --points $(CRASH_POINTS) 2>&1); \
	    rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing" ; [ $$rc -eq 0 ] || fail=1; \
	    printf "%-24s %-14s " "  3 channels x 3 banks" $$w; \
	    out=$$($$pmlab crash --config nvm-lalea --set controller.logging=$$l --set device.channels=3 --set device.banks=3 --workload $$w --points $(CRASH_POINTS) 2>&1); \
	    rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing" ; [ $$rc -eq 0 ] || fail=1; \
	    printf "%-24s %-14s " "  tiny caches (no-steal)" $$w; \
	    out=$$($$pmlab crash --config nvm-lalea --set controller.logging=$$l $(TINY_CACHES) --require-counter logging.absorbed_writebacks --workload $$w --points $(CRASH_POINTS) 2>&1); \
	    rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing|require-counter" ; [ $$rc -eq 0 ] || fail=1; \
	  done; \
	done; \
	for l in lalea lalea+blom lalea-lad; do \
	  printf "%-24s %-14s " "logging=$$l, log wraps" tpcc-hw; \
	  out=$$($$pmlab crash --config nvm-lalea --set controller.logging=$$l --workload tpcc-hw --ops 1500 --points $(CRASH_POINTS) 2>&1); \
	  rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing|not reclaimed" ; [ $$rc -eq 0 ] || fail=1; \
	done; \
	for l in $(LOGGING_SCHEMES); do \
	  printf "%-24s %-14s " "logging=$$l, 64 KiB log" tpcc-hw; \
	  out=$$($$pmlab crash --config nvm-lalea --set controller.logging=$$l --set controller.log_bytes=65536 --workload tpcc-hw --ops 1500 --points $(CRASH_POINTS) 2>&1); \
	  rc=$$?; echo "$$out" | grep -E "^passed|^pmlab:|first failing|not reclaimed" ; [ $$rc -eq 0 ] || fail=1; \
	done; exit $$fail
