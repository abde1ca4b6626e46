# SPDX-License-Identifier: BSD-3-Clause
# Glyd: `make` builds the libraries and the CLI; `make test` runs every test.
#
#   make               build/glyd, build/libglyd.{a,so} (the codec),
#                      build/libglyd-llm.{a,so} (models, the engine)
#   make test          unit and CLI tests; ends with "N passed, N failed"
#   make asan          the same tests under AddressSanitizer and UBSan
#   make valgrind      a representative subset under valgrind (leaks, bad reads)
#   make fuzz          libFuzzer targets, each run FUZZ_SECONDS (default 60)
#   make bench         the benchmark against zstd, lz4, snappy, brotli, xz
#   make bench-tensor  the tensor codec on BENCH_FILE (a .safetensors file)
#   make bench-kv      KV pages on the kv fixture's real caches, against bf16
#   make bench-kv-engine  the engine's KV cache, bf16 against coded pages
#   make bench-records glyd -r on the corpus logs and tables, against zstd -19, xz
#   make bench-fused   the engine's one-vector products, 3-bit against 4-bit codes
#   make bench-tiles   the prompt kernels (fp32, bf16 pairs) against the FMA peak
#   make bench-deltanet  Gated DeltaNet's recurrence and chunked form
#   make gpu-model     the GPU products modelled on the CPU (no GPU needed)
#   make tools         build/synth_model: synthetic models for speed tests
#   make go-test       the Go module's tests (go/)
#   make py-test       the Python package's tests, in build/venv
#   make bench-python  the Python binding against the zstandard package
#   make bench-from-pretrained  glyd.from_pretrained against transformers
#   make demo          a sample compressed, a model packed, verified and run
#   make install       PREFIX=/usr/local: both libraries, headers, .pc files,
#                      the CLI, its man page
#
# Plain `make` installs nothing: it names a missing library and its package.
# `make test`, `make demo` and the other task targets install the Debian
# packages they need (tools/deps.sh). Set V=1 to see the commands.

SHELL    := /bin/bash
CC       ?= cc
PREFIX   ?= /usr/local
BUILD    ?= build
OPT      ?= -O3
CFLAGS   ?= $(OPT) -g -DNDEBUG
WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wpointer-arith -Wvla
CPPFLAGS += -Iinclude -D_DEFAULT_SOURCE -D_FILE_OFFSET_BITS=64
ALLFLAGS  = -std=c11 -fPIC -fvisibility=hidden $(WARNINGS) $(CPPFLAGS) $(CFLAGS)
# libglyd needs only these; libglyd-llm adds JSON, regular expressions and
# Unicode for models' files and tokenizers.
CODEC_LIBS := -lxxhash -lpthread -lm
LLM_LIBS   := -ljansson -lpcre2-8 -lutf8proc
LDLIBS   += $(LLM_LIBS) $(CODEC_LIBS)
FUZZ_SECONDS ?= 60
SOVERSION := 0
VERSION  := $(shell sed -n 's/^\#define GLYD_VERSION_STRING "\(.*\)"/\1/p' include/glyd.h)

ifeq ($(V),1)
Q :=
else
Q := @
endif

# The shared model fixture that the packed-model checks use.
FIXTURE  := ../shared/fixtures/stories260K

# libglyd: the codec and the tensor codec. libglyd-llm: models and the
# engine, with the GPU backend's host side (the devices are CUDA, loaded at
# run time, or its emulation on the CPU).
LIB_SRC  := $(sort $(wildcard lib/*/*.c))
LLM_SRC  := $(sort $(wildcard llm/*/*.c)) gpu/backend.c gpu/emulated_device.c gpu/tensor_gpu.c
CLI_SRC  := $(sort $(wildcard cli/*.c))
TEST_SRC := $(sort $(wildcard tests/unit/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
LLM_OBJ  := $(LLM_SRC:%.c=$(BUILD)/obj/%.o)
CLI_OBJ  := $(CLI_SRC:%.c=$(BUILD)/obj/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o)
DEPS     := $(LIB_OBJ:.o=.d) $(LLM_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_OBJ:.o=.d)
# What programs of this tree link: both libraries, statically.
STATIC_LIBS := $(BUILD)/libglyd-llm.a $(BUILD)/libglyd.a

.PHONY: all lib test asan valgrind fuzz bench bench-debian bench-tensor bench-kv bench-kv-engine bench-records bench-fused bench-tiles bench-deltanet bench-load gpu-model tools demo install \
        uninstall clean py-test bench-python bench-from-pretrained \
        portable cuda cuda-cpu bench-engine-qwen35

all: $(BUILD)/glyd lib

lib: $(BUILD)/libglyd.a $(BUILD)/libglyd.so $(BUILD)/libglyd-llm.a $(BUILD)/libglyd-llm.so

# The libraries are checked once a build folder (again when deps.sh
# changes), before any compiler runs, also under -j.
$(BUILD)/.deps-checked: tools/deps.sh
	@mkdir -p $(@D)
	$(Q)CC="$(CC)" CPPFLAGS="$(CPPFLAGS)" LDFLAGS="$(LDFLAGS)" ./tools/deps.sh check
	@touch $@

$(BUILD)/obj/%.o: %.c | $(BUILD)/.deps-checked
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC  $<")
	$(Q)$(CC) $(ALLFLAGS) -MMD -MP -c $< -o $@

# XXH3 built for AVX2 in its own file, called only where the CPU has it.
ifneq ($(filter x86_64%,$(shell $(CC) -dumpmachine)),)
$(BUILD)/obj/lib/common/checksum_avx2.o: ALLFLAGS += -mavx2
endif

$(BUILD)/libglyd.a: $(LIB_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

$(BUILD)/libglyd.so: $(LIB_OBJ)
	$(Q)$(CC) -shared -Wl,-soname,libglyd.so.$(SOVERSION) $(LDFLAGS) $(CFLAGS) $^ -o $@ $(CODEC_LIBS)

$(BUILD)/libglyd-llm.a: $(LLM_OBJ)
	@rm -f $@
	$(Q)ar rcs $@ $^

# The engine reaches below the codec's API (tensor views, the thread pool,
# checksums), so the shared library carries its own copy of the codec's
# objects, hidden: it exports only the API of glyd_tensor.h's packed models
# and of glyd_llm.h, and needs no libglyd.so at run time.
$(BUILD)/libglyd-llm.so: $(LLM_OBJ) $(BUILD)/libglyd.a
	$(Q)$(CC) -shared -Wl,-soname,libglyd-llm.so.$(SOVERSION) $(LDFLAGS) $(CFLAGS) $(LLM_OBJ) $(BUILD)/libglyd.a \
	    -Wl,--exclude-libs,libglyd.a -o $@ $(LDLIBS)

$(BUILD)/glyd: $(CLI_OBJ) $(STATIC_LIBS)
	$(Q)$(CC) $(LDFLAGS) $(CFLAGS) $(CLI_OBJ) $(STATIC_LIBS) -o $@ $(LDLIBS)

# Unit tests reach inside the layers, so they link the static libraries.
$(BUILD)/unit_tests: $(TEST_OBJ) $(STATIC_LIBS)
	$(Q)$(CC) $(LDFLAGS) $(CFLAGS) $(TEST_OBJ) $(STATIC_LIBS) -o $@ $(LDLIBS)

test:
	$(Q)./tools/deps.sh test
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/unit_tests
	$(Q)bash tests/run.sh $(BUILD)

# Sanitizers: a separate build tree; the heaviest tests shrink (GLYD_TEST_QUICK).
SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
asan:
	$(Q)./tools/deps.sh test
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/asan CFLAGS="-O1 -g $(SAN)" \
	    $(BUILD)/asan/glyd $(BUILD)/asan/unit_tests
	$(Q)GLYD_TEST_QUICK=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	    bash tests/run.sh $(BUILD)/asan

# Valgrind on an optimized build: every test of the API and format layers
# that finishes quickly under emulation, and the CLI on real files.
VALGRIND := valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect
valgrind:
	$(Q)./tools/deps.sh valgrind
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/unit_tests
	$(Q)GLYD_TEST_QUICK=1 GLYD_CORPUS=../shared/corpus $(VALGRIND) $(BUILD)/unit_tests \
	    varint bits pool histogram fse_ huffman_round sequence repeat block_coder \
	    small_inputs empty one_byte streaming flush custom concatenated frame_queries \
	    segments parameters pledged wrong_checksum forged small_destination \
	    tensor_ safetensors hf_config pack_ packed_index damaged_packed integrity_ \
	    engine_stories260k_logits_from_packed engine_refuses engine_tiny_qwen3_yarn \
	    tokenizer_from sampler_rules gpu_backend_emulated_stories gpu_backend_emulated_coded \
	    gpu_backend_emulated_tiny gpu_backend_emulated_top_k gpu_backend_emulated_sampling \
	    gpu_backend_emulated_long gpu_gemv_emulated_rows gpu_kernels_ records_frames_cut \
	    records_frames_small records_frames_flush records_frames_refuse records_flag \
	    cm_refuses_a_stream cm_streams_do_not records_frames_context_mixed_damage \
	    kv_pages_of_one kv_pages_refuse kv_lossless_rewound kv_lossless_refuses
	$(Q)tmp=$$(mktemp -d) && cp samples/alice29.txt $$tmp/ && \
	    $(VALGRIND) $(BUILD)/glyd -q $$tmp/alice29.txt && \
	    $(VALGRIND) $(BUILD)/glyd -q -t $$tmp/alice29.txt.glyd && \
	    $(VALGRIND) $(BUILD)/glyd -q -d -T2 -o $$tmp/back $$tmp/alice29.txt.glyd && \
	    cmp $$tmp/back samples/alice29.txt && \
	    $(VALGRIND) $(BUILD)/glyd -q -r -o $$tmp/hpc.glyd ../shared/corpus/logs/HPC_2k.log && \
	    $(VALGRIND) $(BUILD)/glyd -q -d -T2 -o $$tmp/hpc $$tmp/hpc.glyd && \
	    cmp $$tmp/hpc ../shared/corpus/logs/HPC_2k.log && \
	    head -c 20000 ../shared/corpus/logs/HPC_2k.log > $$tmp/hpc20k && \
	    $(VALGRIND) $(BUILD)/glyd -q -r --max -o $$tmp/hpc20k.glyd $$tmp/hpc20k && \
	    $(VALGRIND) $(BUILD)/glyd -q -d -T2 -o $$tmp/hpc20k.back $$tmp/hpc20k.glyd && \
	    cmp $$tmp/hpc20k.back $$tmp/hpc20k && \
	    $(VALGRIND) $(BUILD)/glyd pack -q -T2 $(FIXTURE) -o $$tmp/m.glyd && \
	    $(VALGRIND) $(BUILD)/glyd verify -q $$tmp/m.glyd $(FIXTURE) && \
	    $(VALGRIND) $(BUILD)/glyd unpack -q $$tmp/m.glyd -o $$tmp/m && \
	    diff -r $$tmp/m $(FIXTURE) && rm -rf $$tmp && echo "valgrind: clean"

# The portable paths (no AVX2, no BMI2) that other CPUs take: every unit
# test on a build without SIMD, where the decoders take their plain variants.
portable:
	$(Q)./tools/deps.sh build
	$(Q)$(MAKE) --no-print-directory BUILD=$(BUILD)/portable CFLAGS="-O2 -g -DGLYD_NO_SIMD" \
	    $(BUILD)/portable/unit_tests
	$(Q)GLYD_TEST_QUICK=1 GLYD_CORPUS=../shared/corpus $(BUILD)/portable/unit_tests

# libFuzzer: each target runs FUZZ_SECONDS from a seed corpus of small
# frames made by the CLI; findings are kept in $(BUILD)/fuzz/findings.
# fuzz_cuda runs the CUDA kernels themselves, on the CPU (tests/cudacpu).
# fuzz_config reads config.json files (seeds: real configs); fuzz_index,
# packed-model indexes inside the fixture's packed model (seed: its index).
# fuzz_chat_template, chat templates (seeds: the vendors' templates).
# fuzz_kv_page, KV pages (seeds: slices of the kv fixture's caches).
# fuzz_records, log columns (seeds: the corpus logs' and CSV heads, as text and as
# columns, and an SQL dump); fuzz_cm, the context-mixing coder (seeds: the same).
# The targets link the library and the engine compiled once, instrumented
# for coverage and the sanitizers; they build, and run, a core each.
FUZZ_TARGETS := decompress roundtrip stream tensor pack tokenizer config index chat_template records cm kv_page
FUZZ_OBJ     := $(BUILD)/fuzz/obj
FUZZ_LIB_OBJ := $(addprefix $(FUZZ_OBJ)/,$(LIB_SRC:.c=.o) $(LLM_SRC:.c=.o))
NPROC        := $(shell nproc 2>/dev/null || echo 1)
fuzz:
	$(Q)./tools/deps.sh fuzz
	$(Q)./tools/deps.sh cudacpu
	$(Q)$(MAKE) --no-print-directory -j$(NPROC) all $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%) $(BUILD)/fuzz/fuzz_cuda
	$(Q)mkdir -p $(BUILD)/fuzz/seeds $(BUILD)/fuzz/findings
	$(Q)$(CC) -O1 -g -std=c11 $(CPPFLAGS) tests/fuzz/seedgen.c $(STATIC_LIBS) -o $(BUILD)/fuzz/seedgen $(LDLIBS)
	$(Q)for l in 1 3 9; do head -c 3000 samples/alice29.txt | $(BUILD)/glyd -q -$$l -c \
	        > $(BUILD)/fuzz/seeds/alice-$$l.glyd; done
	$(Q)head -c 70000 samples/alice29.txt | $(BUILD)/glyd -q -c --fast=2 > $(BUILD)/fuzz/seeds/fast.glyd
	$(Q)head -c 200000 /dev/zero | $(BUILD)/glyd -q -c > $(BUILD)/fuzz/seeds/zeros.glyd
	$(Q)for f in logs/HPC_2k.log tables/diamonds.csv; do head -c 6000 ../shared/corpus/$$f | \
	        $(BUILD)/glyd -q -r -c > $(BUILD)/fuzz/seeds/records-$${f##*/}.glyd; \
	    head -c 6000 ../shared/corpus/$$f | \
	        $(BUILD)/glyd -q -r --max -c > $(BUILD)/fuzz/seeds/records-max-$${f##*/}.glyd; done
	$(Q)mkdir -p $(BUILD)/fuzz/seeds-tensor $(BUILD)/fuzz/seeds-pack $(BUILD)/fuzz/seeds-records
	$(Q)$(BUILD)/fuzz/seedgen $(BUILD)/fuzz/seeds-tensor $(BUILD)/fuzz/seeds-pack $(BUILD)/fuzz/seeds-records \
	    $(wildcard ../shared/corpus/logs/*.log ../shared/corpus/tables/*.csv) samples/alice29.txt
	$(Q)cp tests/fuzz/seeds-records/* $(BUILD)/fuzz/seeds-records/
	$(Q)mkdir -p $(BUILD)/fuzz/seeds-cm && cp $(BUILD)/fuzz/seeds-records/* $(BUILD)/fuzz/seeds-cm/
	$(Q)mkdir -p $(BUILD)/fuzz/seeds-kv_page && for o in 4096 3000000 9000000 18800000; do \
	    tail -c +$$o ../shared/fixtures/kv/kv.safetensors | head -c 4108 > $(BUILD)/fuzz/seeds-kv_page/kv-$$o; done
	$(Q)mkdir -p $(BUILD)/fuzz/seeds-tokenizer && cp tests/fuzz/seeds-tokenizer/* $(BUILD)/fuzz/seeds-tokenizer/
	$(Q)mkdir -p $(BUILD)/fuzz/seeds-chat_template && cp tests/data/chat/templates/*.jinja $(BUILD)/fuzz/seeds-chat_template/
	$(Q)mkdir -p $(BUILD)/fuzz/seeds-config && cp tests/data/configs/*.json $(BUILD)/fuzz/seeds-config/ && \
	    cat $(FIXTURE)/config.json > $(BUILD)/fuzz/seeds-config/stories260K.json && \
	    for d in tests/data/tiny-*; do cp $$d/config.json $(BUILD)/fuzz/seeds-config/$${d##*/}.json; done
	$(Q)mkdir -p $(BUILD)/fuzz/seeds-index && p=$(BUILD)/fuzz/index-body.glyd && \
	    $(BUILD)/glyd pack -q -f $(FIXTURE) -o $$p && \
	    len=$$(tail -c 24 $$p | head -c 8 | od -An -tu8 | tr -d ' ') && \
	    tail -c $$((len + 32)) $$p | head -c $$len > $(BUILD)/fuzz/seeds-index/stories260K.json
	$(Q)printf '%s\n' $(FUZZ_TARGETS) cuda | xargs -P $(NPROC) -n 1 ./tools/fuzz_one.sh $(BUILD) $(FUZZ_SECONDS) || \
	    { echo "fuzzing found a failure (in $(BUILD)/fuzz/findings)"; exit 1; }

bench:
	$(Q)./tools/deps.sh bench
	$(Q)$(MAKE) --no-print-directory lib
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) bench/bench.c $(BUILD)/libglyd.a \
	    -lzstd -llz4 -lsnappy -lbrotlienc -lbrotlidec -llzma $(CODEC_LIBS) -o $(BUILD)/bench
	$(Q)$(BUILD)/bench $(BENCH_ARGS)

# The same benchmark on a second corpus, about 80 MB of files from Debian
# packages (bench/debian_corpus.sh), built once in $(BUILD)/debian-corpus;
# its tables go to bench/out/debian/.
bench-debian:
	$(Q)test -e $(BUILD)/debian-corpus/MANIFEST || bench/debian_corpus.sh $(BUILD)/debian-corpus
	$(Q)$(MAKE) --no-print-directory bench \
	    BENCH_ARGS="--corpus $(BUILD)/debian-corpus --out bench/out/debian $(BENCH_ARGS)"

# Records frames (glyd -r) on the shared corpus's logs and tables, then on
# a second corpus (bench/records_corpus.sh: Debian's package-manager logs,
# Debian packages' tables): ratios against zstd -19, xz -9e and the plain
# --max, and -r's speed each way on one core.
$(BUILD)/bench_records: bench/bench_records.c $(STATIC_LIBS)
	$(Q)./tools/deps.sh bench
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) bench/bench_records.c $(STATIC_LIBS) -lzstd -llzma $(LDLIBS) -o $@
bench-records: all $(BUILD)/bench_records
ifneq ($(BENCH_FILES),)
	$(Q)$(BUILD)/bench_records $(BENCH_FILES)
else
	$(Q)$(BUILD)/bench_records $(wildcard ../shared/corpus/logs/*.log)
	$(Q)echo; $(BUILD)/bench_records $(wildcard ../shared/corpus/tables/*)
	$(Q)test -d $(BUILD)/records-corpus/dumps || bench/records_corpus.sh $(BUILD)/records-corpus
	$(Q)echo; $(BUILD)/bench_records $(BUILD)/records-corpus/logs/*
	$(Q)echo; $(BUILD)/bench_records $(BUILD)/records-corpus/tables/*
	$(Q)echo; $(BUILD)/bench_records $(BUILD)/records-corpus/dumps/*
endif

# The tensor codec on a safetensors file (BENCH_FILE): bits per weight
# against the Shannon bound and zstd -19, speeds with 1 and 2 threads.
$(BUILD)/bench_tensor: bench/bench_tensor.c $(STATIC_LIBS)
	$(Q)./tools/deps.sh bench
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) bench/bench_tensor.c $(STATIC_LIBS) -lzstd $(LDLIBS) -o $@
bench-tensor: all $(BUILD)/bench_tensor
	$(Q)$(BUILD)/bench_tensor $(or $(BENCH_FILE),$(FIXTURE)/model.safetensors) $(BENCH_ARGS)

# KV pages on the kv fixture's caches: bytes against bf16 per model and
# keys or values, pages of 16 and 32 positions, and the order-0 bound.
$(BUILD)/bench_kv: bench/bench_kv.c $(STATIC_LIBS)
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) $< $(STATIC_LIBS) $(LDLIBS) -o $@
bench-kv: all $(BUILD)/bench_kv
	$(Q)$(BUILD)/bench_kv ../shared/fixtures/kv/kv.safetensors

# The products that decode in registers, one thread, 3-bit against 4-bit
# codes (BENCH_ARGS=--avx2 keeps them to AVX2).
$(BUILD)/bench_fused: bench/bench_fused.c $(STATIC_LIBS)
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) $< $(STATIC_LIBS) $(LDLIBS) -o $@
bench-fused: all $(BUILD)/bench_fused
	$(Q)$(BUILD)/bench_fused $(BENCH_ARGS)

# The prompt kernel (tiles.c) at each SIMD level against the core's FMA
# peak, and the products in bf16 pairs (tiles_bf16.c), one thread.
$(BUILD)/bench_tiles: bench/bench_tiles.c $(STATIC_LIBS)
	$(Q)$(CC) $(OPT) -std=c11 $(CPPFLAGS) $(WARNINGS) $< $(STATIC_LIBS) $(LDLIBS) -o $@
bench-tiles: all $(BUILD)/bench_tiles
	$(Q)$(BUILD)/bench_tiles $(BENCH_ARGS)

# Gated DeltaNet's recurrence against the chunked form of the delta rule,
# one thread, Qwen3.5-9B's heads.
$(BUILD)/bench_deltanet: bench/bench_deltanet.c $(STATIC_LIBS)
	$(Q)$(CC) $(OPT) -std=c11 $(CPPFLAGS) $(WARNINGS) $< $(STATIC_LIBS) $(LDLIBS) -o $@
bench-deltanet: all $(BUILD)/bench_deltanet
	$(Q)$(BUILD)/bench_deltanet $(BENCH_ARGS)

# The engine's KV cache in bf16 against coded pages (--kv lossless) on the
# synthetic 0.5B model: decode tokens/s with a 4096-position context and a
# short one, attention's share of a step, the cache's bytes.
$(BUILD)/bench_kv_engine: bench/bench_kv_engine.c $(STATIC_LIBS)
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) $< $(STATIC_LIBS) $(LDLIBS) -o $@
bench-kv-engine: all $(BUILD)/bench_kv_engine $(BUILD)/synth_model
	$(Q)test -e $(BUILD)/synth-0.5b/config.json || $(BUILD)/synth_model --shape 0.5b -o $(BUILD)/synth-0.5b
	$(Q)$(BUILD)/bench_kv_engine $(BUILD)/synth-0.5b $(BENCH_ARGS)

# The engine on compressed against plain bf16 weights: decode and prompt
# tokens/s, resident memory. Three synthetic models, each made once under
# $(BUILD): Qwen2.5-0.5B's shape (synth-0.5b), then the two below (a
# mixture of experts, Qwen3.5); ENGINE_MODEL=DIR benches that model alone.
# On the 0.5B model llama.cpp runs too, in turns with the engine, best of
# BENCH_ROUNDS (bench/llama_cpp.sh fetches and builds it once in
# $(BUILD)/llama-cpp); LLAMA_CPP=0 leaves it out (no network needed).
LLAMA_CPP    ?= 1
BENCH_ROUNDS ?= 3
$(BUILD)/bench_engine: bench/bench_engine.c $(STATIC_LIBS)
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) $< $(STATIC_LIBS) $(LDLIBS) -o $@
.PHONY: bench-engine bench-engine-moe bench-engine-qwen35
bench-engine: all $(BUILD)/bench_engine $(BUILD)/synth_model
ifneq ($(ENGINE_MODEL),)
	$(Q)$(BUILD)/bench_engine $(ENGINE_MODEL) $(BENCH_ARGS)
else
	$(Q)test -e $(BUILD)/synth-0.5b/config.json || $(BUILD)/synth_model --shape 0.5b -o $(BUILD)/synth-0.5b
ifeq ($(LLAMA_CPP),0)
	$(Q)$(BUILD)/bench_engine $(BUILD)/synth-0.5b $(BENCH_ARGS)
else
	$(Q)bench/llama_cpp.sh $(BUILD) $(BUILD)/synth-0.5b --engine $(BUILD)/bench_engine \
	    --rounds $(BENCH_ROUNDS) --engine-args "$(BENCH_ARGS)"
endif
	$(Q)$(MAKE) --no-print-directory bench-engine-moe bench-engine-qwen35
endif

# A mixture of experts: Qwen3-30B-A3B's widths (128 experts 768 wide, 8
# chosen for each token) cut to MOE_LAYERS layers, made once in
# $(BUILD)/synth-moe-$(MOE_LAYERS).
MOE_LAYERS ?= 2
bench-engine-moe: all $(BUILD)/bench_engine $(BUILD)/synth_model
	$(Q)test -e $(BUILD)/synth-moe-$(MOE_LAYERS)/config.json || \
	    $(BUILD)/synth_model --shape 30b-a3b --layers $(MOE_LAYERS) -o $(BUILD)/synth-moe-$(MOE_LAYERS)
	$(Q)$(BUILD)/bench_engine $(BUILD)/synth-moe-$(MOE_LAYERS) $(BENCH_ARGS)

# Qwen3.5-9B's widths, cut to QWEN35_LAYERS layers (three Gated DeltaNet
# layers and one of full attention at 4), made once in
# $(BUILD)/synth-qwen3.5-9b-$(QWEN35_LAYERS)l.
QWEN35_LAYERS ?= 4
bench-engine-qwen35: all $(BUILD)/bench_engine $(BUILD)/synth_model
	$(Q)test -e $(BUILD)/synth-qwen3.5-9b-$(QWEN35_LAYERS)l/config.json || $(BUILD)/synth_model --shape qwen3.5-9b \
	    --layers $(QWEN35_LAYERS) -o $(BUILD)/synth-qwen3.5-9b-$(QWEN35_LAYERS)l
	$(Q)$(BUILD)/bench_engine $(BUILD)/synth-qwen3.5-9b-$(QWEN35_LAYERS)l $(BENCH_ARGS)

# What checking a packed model's tensors at load costs: the synthetic 0.5B
# model packed in each layout, opened with and without the check.
$(BUILD)/bench_load: bench/bench_load.c $(STATIC_LIBS)
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) $< $(STATIC_LIBS) $(LDLIBS) -o $@

bench-load: all $(BUILD)/bench_load $(BUILD)/synth_model
	$(Q)test -e $(BUILD)/synth-0.5b/config.json || $(BUILD)/synth_model --shape 0.5b -o $(BUILD)/synth-0.5b
	$(Q)test -e $(BUILD)/synth-0.5b.glyd || $(BUILD)/glyd pack -q -T0 $(BUILD)/synth-0.5b -o $(BUILD)/synth-0.5b.glyd
	$(Q)test -e $(BUILD)/synth-0.5b-fast.glyd || \
	    $(BUILD)/glyd pack -q -T0 --fast-layout $(BUILD)/synth-0.5b -o $(BUILD)/synth-0.5b-fast.glyd
	$(Q)$(BUILD)/bench_load $(BUILD)/synth-0.5b-fast.glyd $(BUILD)/synth-0.5b.glyd --compact $(BENCH_ARGS)

# The CUDA kernels (gpu/) and their check on a GPU (tests/gpu/run.sh).
# Compiles without a GPU; CI builds it so that it cannot rot.
NVCC       ?= nvcc
CUDA_ARCHS := -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
              -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=[sm_90,compute_90]
CUDA_FLAGS := -O3 -std=c++17 -Iinclude -Igpu -Xcompiler -Wall,-Wextra,-Werror,-fPIC $(CUDA_ARCHS)
CUDA_INC   := $(shell d=$$(command -v $(NVCC)) && echo $$(dirname $$d)/../include)
# The kernels by job: bulk decoding, products, uploads, the engine's other
# operations; what they share (cuda_common, copies into shared memory).
CUDA_UNITS := decode products upload cuda_common engine
CUDA_HDRS  := $(wildcard gpu/*.cuh) gpu/glyd_cuda.h gpu/tensor_kernels.h gpu/engine_kernels.h include/glyd.h \
              include/glyd_tensor.h
CUDA_OBJ   := $(addprefix $(BUILD)/cuda/,$(CUDA_UNITS:=.o) host.o device.o)
cuda: $(BUILD)/cuda/libglyd_cuda.a $(BUILD)/cuda/libglyd_cuda.so $(BUILD)/cuda/gpu_check $(BUILD)/gpu_engine
$(BUILD)/cuda/%.o: gpu/%.cu $(CUDA_HDRS)
	@mkdir -p $(@D)
	$(Q)$(NVCC) $(CUDA_FLAGS) -c $< -o $@
$(BUILD)/cuda/host.o: gpu/host.c gpu/tensor_gpu.h lib/tensor/tensor.h gpu/tensor_kernels.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALLFLAGS) -c $< -o $@
$(BUILD)/cuda/device.o: gpu/device.c llm/infer/infer.h gpu/engine_kernels.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALLFLAGS) -isystem $(CUDA_INC) -c $< -o $@
$(BUILD)/cuda/libglyd_cuda.a: $(CUDA_OBJ)
	$(Q)$(AR) rcs $@ $^
# What `glyd run --gpu` loads: the kernels, CUDA's device, and a private
# copy of the library code they use (hidden: the program keeps its own).
$(BUILD)/cuda/libglyd_cuda.so: $(CUDA_OBJ) $(STATIC_LIBS)
	$(Q)$(NVCC) -shared $(CUDA_OBJ) $(STATIC_LIBS) -Xlinker --exclude-libs,ALL -lcublas $(LDLIBS) -o $@
$(BUILD)/cuda/gpu_check: tests/gpu/gpu_check.cu tests/gpu/synth_weights.h $(BUILD)/cuda/libglyd_cuda.a \
                         $(STATIC_LIBS)
	$(Q)$(NVCC) $(CUDA_FLAGS) $< $(BUILD)/cuda/libglyd_cuda.a $(STATIC_LIBS) -lcublas $(LDLIBS) -o $@

# The engine's GPU backend on a GPU: checks and tokens/s (in build/, beside
# which the engine looks for cuda/libglyd_cuda.so).
$(BUILD)/gpu_engine: tests/gpu/gpu_engine.c $(STATIC_LIBS)
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) $< $(STATIC_LIBS) $(LDLIBS) -o $@

# The same CUDA sources run on the CPU (tests/cudacpu/cudacpu.h): kernels,
# launchers and the engine's device, with ASan and UBSan, checked against
# the CPU decoder and engine by tests/gpu's own programs, where no GPU is at
# hand (a few minutes). gpu_engine finds the library beside it, in cuda/.
CPU_CUDA       := $(BUILD)/cudacpu
CPU_CUDA_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
CPU_CUDA_CXX   := -std=c++17 -O1 -g -fPIC -fno-strict-aliasing -Wall -Wextra -Werror -Wno-unknown-pragmas \
                  -Wno-unused-variable -Itests/cudacpu/include -Iinclude -Igpu -include cuda_runtime.h
CPU_CUDA_FLAGS := $(CPU_CUDA_CXX) $(CPU_CUDA_SAN)
CPU_CUDA_DEPS  := tests/cudacpu/cudacpu.h $(wildcard tests/cudacpu/include/*.h tests/cudacpu/include/cub/*/*.cuh) \
                  $(CUDA_HDRS)
CPU_CUDA_OBJ   := $(addprefix $(CPU_CUDA)/,$(CUDA_UNITS:=.o) host.o device.o cudacpu.o)
cuda-cpu: all
	$(Q)./tools/deps.sh cudacpu
	$(Q)$(MAKE) --no-print-directory $(CPU_CUDA)/selftest $(CPU_CUDA)/cuda/libglyd_cuda.so $(CPU_CUDA)/gpu_engine \
	    $(CPU_CUDA)/gpu_check
	$(Q)$(CPU_CUDA)/selftest
	$(Q)CUDACPU_ORDER=swapped $(CPU_CUDA)/selftest
	$(Q)$(CPU_CUDA)/gpu_check ../shared/fixtures --small
	$(Q)CUDACPU_ORDER=swapped $(CPU_CUDA)/gpu_check ../shared/fixtures --small
	$(Q)$(CPU_CUDA)/gpu_engine check ../shared/fixtures
	$(Q)$(CPU_CUDA)/gpu_check ../shared/fixtures --profile
.SECONDARY: $(addprefix $(CPU_CUDA)/,$(CUDA_UNITS:=.cpp)) $(CPU_CUDA)/selftest.cpp
$(CPU_CUDA)/%.cpp: gpu/%.cu tests/cudacpu/kernels.sed
	@mkdir -p $(@D)
	$(Q){ echo '#line 1 "$<"'; sed -E -f tests/cudacpu/kernels.sed $<; } > $@
$(CPU_CUDA)/%.o: $(CPU_CUDA)/%.cpp $(CPU_CUDA_DEPS)
	$(Q)$(CXX) $(CPU_CUDA_FLAGS) -c $< -o $@
$(CPU_CUDA)/selftest.cpp: tests/cudacpu/selftest.cu tests/cudacpu/kernels.sed
	@mkdir -p $(@D)
	$(Q){ echo '#line 1 "$<"'; sed -E -f tests/cudacpu/kernels.sed $<; } > $@
$(CPU_CUDA)/selftest: $(CPU_CUDA)/selftest.o $(CPU_CUDA)/cudacpu.o
	$(Q)$(CXX) $(CPU_CUDA_SAN) $^ -o $@
$(CPU_CUDA)/cudacpu.o: tests/cudacpu/cudacpu.cpp $(CPU_CUDA_DEPS)
	@mkdir -p $(@D)
	$(Q)$(CXX) $(CPU_CUDA_FLAGS) -c $< -o $@
$(CPU_CUDA)/host.o: gpu/host.c gpu/tensor_gpu.h lib/tensor/tensor.h gpu/tensor_kernels.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALLFLAGS) $(CPU_CUDA_SAN) -c $< -o $@
$(CPU_CUDA)/device.o: gpu/device.c llm/infer/infer.h gpu/engine_kernels.h $(CPU_CUDA_DEPS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(ALLFLAGS) $(CPU_CUDA_SAN) -Itests/cudacpu/include -c $< -o $@
$(CPU_CUDA)/cuda/libglyd_cuda.so: $(CPU_CUDA_OBJ) $(STATIC_LIBS)
	@mkdir -p $(@D)
	$(Q)$(CXX) -shared $(CPU_CUDA_SAN) $(CPU_CUDA_OBJ) $(STATIC_LIBS) -Wl,--exclude-libs,ALL $(LDLIBS) -o $@
$(CPU_CUDA)/gpu_check: tests/gpu/gpu_check.cu tests/gpu/synth_weights.h $(CPU_CUDA_OBJ) $(STATIC_LIBS)
	$(Q)$(CXX) $(CPU_CUDA_FLAGS) -x c++ $< -x none $(CPU_CUDA_OBJ) $(STATIC_LIBS) $(LDLIBS) -o $@
$(CPU_CUDA)/gpu_engine: tests/gpu/gpu_engine.c $(STATIC_LIBS)
	@mkdir -p $(@D)
	$(Q)$(CC) -O1 -g -std=c11 $(CPPFLAGS) $(WARNINGS) $(CPU_CUDA_SAN) $< $(STATIC_LIBS) $(LDLIBS) -o $@

# fuzz_cuda: the library and host.c in C, the kernels (gpu/*.cu made
# C++ as for make cuda-cpu) in C++, all instrumented for coverage; cudacpu,
# whose scheduling would only add noise to it, for the sanitizers alone
FUZZ_CUDA      := $(BUILD)/fuzz/cuda
FUZZ_SAN       := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
FUZZ_CUDA_C    := $(addprefix $(FUZZ_OBJ)/,$(LIB_SRC:.c=.o) gpu/host.o gpu/tensor_gpu.o)
FUZZ_CUDA_KERN := $(addprefix $(FUZZ_CUDA)/,$(addsuffix .o,$(filter-out engine,$(CUDA_UNITS))))
FUZZ_CUDA_CXX  := $(FUZZ_CUDA_KERN) $(FUZZ_CUDA)/cudacpu.o $(FUZZ_CUDA)/fuzz_cuda.o
$(FUZZ_OBJ)/%.o: %.c | $(BUILD)/.deps-checked
	@mkdir -p $(@D)
	$(Q)clang -O1 -g -std=c11 $(CPPFLAGS) $(FUZZ_SAN) -MMD -MP -c $< -o $@
$(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIB_OBJ)
	$(Q)clang -O1 -g -std=c11 $(CPPFLAGS) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	    -DGLYD_FUZZ_PACKED='"$(BUILD)/fuzz/index-body.glyd"' -MMD -MP $< $(FUZZ_LIB_OBJ) -o $@ $(LDLIBS)
# kept between runs, though only the pattern rule above names them
.SECONDARY: $(FUZZ_LIB_OBJ)
-include $(FUZZ_LIB_OBJ:.o=.d) $(FUZZ_OBJ)/gpu/host.d $(FUZZ_TARGETS:%=$(BUILD)/fuzz/fuzz_%.d)
$(FUZZ_CUDA_KERN): $(FUZZ_CUDA)/%.o: $(CPU_CUDA)/%.cpp $(CPU_CUDA_DEPS)
	@mkdir -p $(@D)
	$(Q)clang++ $(CPU_CUDA_CXX) $(FUZZ_SAN) -c $< -o $@
$(FUZZ_CUDA)/cudacpu.o: tests/cudacpu/cudacpu.cpp $(CPU_CUDA_DEPS)
	@mkdir -p $(@D)
	$(Q)clang++ $(CPU_CUDA_FLAGS) -c $< -o $@
$(FUZZ_CUDA)/fuzz_cuda.o: tests/fuzz/fuzz_cuda.cc $(CPU_CUDA_DEPS)
	@mkdir -p $(@D)
	$(Q)clang++ $(CPU_CUDA_CXX) $(FUZZ_SAN) -c $< -o $@
$(BUILD)/fuzz/fuzz_cuda: $(FUZZ_CUDA_C) $(FUZZ_CUDA_CXX)
	$(Q)clang++ -fsanitize=fuzzer,address,undefined $^ $(LDLIBS) -o $@

# The rows kernel's products modelled on the CPU (bench/gpu_model.c): the
# GPU benchmark's matrices, their warps replayed for instructions and
# shared-memory wavefronts, where no GPU is at hand.
$(BUILD)/gpu_model: bench/gpu_model.c $(STATIC_LIBS) gpu/tensor_kernels.h tests/gpu/synth_weights.h
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) $< $(STATIC_LIBS) $(LDLIBS) -o $@
gpu-model: all $(BUILD)/gpu_model
	$(Q)$(BUILD)/gpu_model $(BENCH_ARGS)

# Tools for speed tests: synthetic models of real shapes.
tools: $(BUILD)/synth_model
$(BUILD)/synth_model: tools/synth_model.c $(STATIC_LIBS)
	$(Q)$(CC) -O2 -std=c11 $(CPPFLAGS) $(WARNINGS) $< $(STATIC_LIBS) $(LDLIBS) -o $@

# The Go module (go/, docs/GO.md) on this build's libglyd.a and glyd: gofmt,
# go vet, go test; nothing fetched, the Go caches in $(BUILD)/go.
.PHONY: go-test
go-test:
	$(Q)./tools/deps.sh go
	$(Q)$(MAKE) --no-print-directory $(BUILD)/libglyd.a $(BUILD)/glyd
	$(Q)bash go/test.sh $(BUILD)

# The Python package (python/): built into a virtual environment in
# $(BUILD)/venv with numpy, pytest, ml_dtypes, torch, transformers and
# safetensors from PyPI, then its tests; bench-python adds zstandard and
# measures the binding against it; bench-from-pretrained runs the synthetic
# 0.5B model through glyd.from_pretrained and transformers.
py-test: all
	$(Q)./tools/deps.sh test
	$(Q)bash tests/python/run.sh $(BUILD)
bench-python: lib
	$(Q)./tools/deps.sh test
	$(Q)bash tests/python/venv.sh $(BUILD) zstandard
	$(Q)$(BUILD)/venv/bin/python bench/bench_python.py --lib $(BUILD)/libglyd.so $(BENCH_ARGS)
bench-from-pretrained: $(BUILD)/synth_model
	$(Q)./tools/deps.sh test
	$(Q)test -e $(BUILD)/synth-0.5b/config.json || $(BUILD)/synth_model --shape 0.5b -o $(BUILD)/synth-0.5b
	$(Q)bash tests/python/venv.sh $(BUILD)
	$(Q)$(BUILD)/venv/bin/python bench/bench_from_pretrained.py $(BUILD)/synth-0.5b $(BENCH_ARGS)

demo:
	$(Q)./tools/deps.sh demo
	$(Q)$(MAKE) --no-print-directory all
	$(Q)./tools/demo.sh $(BUILD)

HEADERS := glyd.h glyd_tensor.h glyd_llm.h
LIBDIR  := $(DESTDIR)$(PREFIX)/lib
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(LIBDIR)/pkgconfig \
	    $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 755 $(BUILD)/glyd $(DESTDIR)$(PREFIX)/bin/glyd
	for l in libglyd libglyd-llm; do \
	    install -m 644 $(BUILD)/$$l.a $(LIBDIR)/$$l.a && \
	    install -m 755 $(BUILD)/$$l.so $(LIBDIR)/$$l.so.$(VERSION) && \
	    ln -sf $$l.so.$(VERSION) $(LIBDIR)/$$l.so.$(SOVERSION) && \
	    ln -sf $$l.so.$(SOVERSION) $(LIBDIR)/$$l.so || exit 1; done
	for h in $(HEADERS); do install -m 644 include/$$h $(DESTDIR)$(PREFIX)/include/$$h || exit 1; done
	install -m 644 docs/glyd.1 $(DESTDIR)$(PREFIX)/share/man/man1/glyd.1
	for p in glyd glyd-llm; do \
	    sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@VERSION@|$(VERSION)|' $$p.pc.in > $(LIBDIR)/pkgconfig/$$p.pc || exit 1; \
	done

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/glyd $(LIBDIR)/libglyd.a $(LIBDIR)/libglyd.so* \
	    $(LIBDIR)/libglyd-llm.a $(LIBDIR)/libglyd-llm.so* $(DESTDIR)$(PREFIX)/share/man/man1/glyd.1 \
	    $(LIBDIR)/pkgconfig/glyd.pc $(LIBDIR)/pkgconfig/glyd-llm.pc \
	    $(addprefix $(DESTDIR)$(PREFIX)/include/,$(HEADERS))

clean:
	rm -rf $(BUILD)

-include $(DEPS)
