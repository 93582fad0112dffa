# tests/fuzz/fuzz.mk - libFuzzer harnesses (included by the top Makefile).
#
#   make fuzz                  build every fuzzer into build/fuzz/
#   sh tests/fuzz/run.sh [S]   replay tests/fuzz/regress/, then run each
#                              fuzzer for S seconds (default 60)
#
# The core is compiled again with clang and the sanitizers (address,
# undefined, fuzzer coverage; no MPI) into its own directory, so it never
# mixes with the gcc objects of build/. pkg-config runs when a recipe
# needs it, not when the Makefile is read (see the top Makefile). The
# packages: `sh datasets/deps.sh fuzz`.

FUZZ_CC      ?= clang
FUZZ_B       := build/fuzz
FUZZ_PKGS    := yaml-0.1 openblas zlib libpng libjpeg
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_CFLAGS   = -std=c11 -D_GNU_SOURCE -O1 -g -fno-math-errno -Wall -Wextra \
	-pthread -DAKK_VERSION='"fuzz"' -Icore \
	$(shell pkg-config --cflags $(FUZZ_PKGS) 2>/dev/null) $(FUZZ_SAN)
FUZZ_LIBS     = $(shell pkg-config --libs $(FUZZ_PKGS) 2>/dev/null) -lmvec -lm -pthread
FUZZ_NAMES   := spec idx checkpoint resume npy csv png jpeg steps text
FUZZ_BINS    := $(FUZZ_NAMES:%=$(FUZZ_B)/fuzz_%)
# core/io/onnx.c (ONNX export) needs generated protobuf-c code; no fuzzer reads it.
FUZZ_CORE    := $(filter-out core/io/onnx.c,$(sort $(wildcard core/*/*.c)))
FUZZ_OBJ     := $(FUZZ_CORE:%.c=$(FUZZ_B)/%.o)

.PHONY: fuzz
fuzz: $(FUZZ_BINS)

$(FUZZ_B)/core/%.o: core/%.c $(wildcard core/*/*.h) tests/fuzz/fuzz.mk
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

$(FUZZ_B)/libakk.a: $(FUZZ_OBJ)
	rm -f $@ && ar rcs $@ $^

$(FUZZ_B)/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz_util.h $(FUZZ_B)/libakk.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< $(FUZZ_B)/libakk.a $(FUZZ_LIBS)

$(FUZZ_B)/fuzz_png $(FUZZ_B)/fuzz_jpeg: tests/fuzz/fuzz_image.h
