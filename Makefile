# physc — `make` builds build/physc and build/libphysrt.a; `make test` runs every test layer.
# Generated sources (re2c, Bison) go to $(B)/, never into the tree.

B        ?= build
# Every core unless the command line says how many (make -jN): a clean `make test` builds
# three trees (plain, ASan, the fuzzer). Only the top make adds it; the ASan tree's sub-make
# shares its jobs.
ifeq ($(MAKELEVEL)$(filter -j%,$(MAKEFLAGS)),0)
MAKEFLAGS += -j$(shell nproc 2>/dev/null || echo 1)
endif
CC       ?= cc
CLANG    ?= $(shell command -v clang-19 || command -v clang)
RE2C     ?= re2c
BISON    ?= bison
# LLVM is found through llvm-config (the compiler back end links it; see issue 3).
LLVM_CONFIG ?= $(shell command -v llvm-config-19 || command -v llvm-config)

OPT      ?= -O2 -g
CFLAGS   += -std=c17 $(OPT) -Wall -Wextra -Wshadow -Wno-unused-parameter -MMD -MP
CPPFLAGS += -D_DEFAULT_SOURCE -Ilang -Icompiler -Iruntime -I$(B)
LDLIBS   += -lopenblas -lm -lcjson

# LLVM: its headers only for compiler/llvm_jit.c (as system headers, so our warnings stay
# ours); every program links the shared libLLVM (a static link takes many seconds).
LLVM_CPPFLAGS := $(patsubst -I%,-isystem %,$(filter -I% -D%,$(shell $(LLVM_CONFIG) --cflags)))
LLVM_LIBS     := $(shell $(LLVM_CONFIG) --ldflags) \
                 $(shell $(LLVM_CONFIG) --link-shared --libs core orcjit native passes) \
                 $(shell $(LLVM_CONFIG) --link-shared --system-libs)
LDLIBS   += $(LLVM_LIBS)

# MPI (Open MPI's compiler wrapper, when the machine has it): app/dist.c, and the link. Without
# it physc builds and runs as one process (README).
MPICC ?= $(shell command -v mpicc)
ifneq ($(MPICC),)
MPI_CPPFLAGS := -DPHYSC_MPI $(patsubst -I%,-isystem %,$(filter -I%,$(shell $(MPICC) --showme:compile)))
MPI_LIBS     := $(shell $(MPICC) --showme:link)
endif

# runtime/ by layer, lowest first: a folder's files include only their own folder's and lower
# ones' (tests/layers.sh checks it)
RUNTIME_DIRS := core math nn system integrators ad io models train simulate abi
LANG_SRC     := lang/arena.c lang/diag.c lang/diag_json.c lang/parse.c lang/format.c
COMPILER_SRC := $(wildcard compiler/*.c)
APP_SRC      := $(wildcard app/*.c)
RUNTIME_SRC  := $(wildcard $(addprefix runtime/,$(RUNTIME_DIRS:=/*.c)))
GEN_SRC      := $(B)/lexer.c $(B)/parser.c

FRONT_OBJ   := $(patsubst %.c,$(B)/%.o,$(LANG_SRC) $(COMPILER_SRC)) $(B)/lexer.o $(B)/parser.o
RUNTIME_OBJ := $(patsubst %.c,$(B)/%.o,$(RUNTIME_SRC))
APP_OBJ     := $(patsubst %.c,$(B)/%.o,$(APP_SRC))
UNIT_TESTS  := $(patsubst tests/unit/%.c,$(B)/tests/%,$(wildcard tests/unit/*.c))

.PHONY: all test test-fast asan fuzz fuzz-build clean bench
all: $(B)/physc $(B)/libphysrt.a $(B)/libgemm_plain.a

$(B)/physc: $(APP_OBJ) $(FRONT_OBJ) $(B)/viewer_assets.o $(B)/libphysrt.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS) $(MPI_LIBS)

# physc view's page (viewer/: HTML, CSS, script), carried inside physc as C strings
VIEWER_FILES := viewer/view.html viewer/view.css viewer/view.js
$(B)/viewer_assets.c: $(VIEWER_FILES) tools/embed.sh | $(B)
	sh tools/embed.sh $@ physc_view_html=viewer/view.html physc_view_css=viewer/view.css physc_view_js=viewer/view.js
$(B)/viewer_assets.o: $(B)/viewer_assets.c
	$(CC) $(CFLAGS) -c -o $@ $<

$(B)/libphysrt.a: $(RUNTIME_OBJ)
	rm -f $@ && ar rcs $@ $^
# Position-independent, so that `physc emit-c --shared` can link the runtime into a shared
# library (runtime/abi/); without semantic interposition GCC still inlines as before, and a
# program that links the archive gets direct calls from the linker.
$(RUNTIME_OBJ): CFLAGS += -fPIC -fno-semantic-interposition
$(RUNTIME_OBJ): Makefile

# The BLAS-free GEMM an emitted model may link instead of -lopenblas (runtime/deploy/).
$(B)/libgemm_plain.a: $(B)/runtime/deploy/gemm_plain.o
	rm -f $@ && ar rcs $@ $^

$(B)/lexer.c: lang/lexer.re | $(B)
	$(RE2C) -W --no-generation-date -o $@ $<
$(B)/parser.c $(B)/parser.h &: lang/parser.y | $(B)
	$(BISON) -Wall -Werror -o $(B)/parser.c --header=$(B)/parser.h $<

# Generated scanner: needs the parser's token header first.
$(B)/lexer.o: $(B)/lexer.c $(B)/parser.h
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-unused-function -c -o $@ $<
$(B)/parser.o: $(B)/parser.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
$(B)/%.o: %.c $(B)/parser.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<
# The vectorized tanh and tanh divided difference: -O3 vectorizes their loops, and without
# trapping math the branches of the formulas can be computed on every lane and blended.
$(B)/runtime/nn/vtanh.o $(B)/runtime/nn/vtanh_divided.o $(B)/runtime/nn/vsilu.o: CFLAGS += -O3 -fno-trapping-math
$(B)/runtime/nn/mlp.o: CFLAGS += -O3
# The tape's elementwise loops (the RK stages' sums, the tangent passes' products)
$(B)/runtime/ad/tape.o $(B)/runtime/ad/tensor_ops.o: CFLAGS += -O3
# Adam's loop: sqrt without errno is one instruction, which lets it vectorize
$(B)/runtime/train/optim.o: CFLAGS += -O3 -fno-math-errno
# The loop-form field's short loops over a block's states
$(B)/runtime/system/loop_field.o $(B)/runtime/system/loop_field_vjp.o: CFLAGS += -O3
# dopri5's elementwise sums over the batch
$(B)/runtime/math/ode.o: CFLAGS += -O3
$(B)/app/dist.o: app/dist.c $(B)/parser.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(MPI_CPPFLAGS) $(CFLAGS) -c -o $@ $<
$(B)/compiler/llvm_jit.o: compiler/llvm_jit.c $(B)/parser.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(LLVM_CPPFLAGS) $(CFLAGS) -c -o $@ $<

# ($< and the objects only: -MMD lists the headers, and a source a test #includes, as
# prerequisites, and neither must be compiled in again)
$(B)/tests/%: tests/unit/%.c tests/unit/check.h $(FRONT_OBJ) $(B)/libphysrt.a
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -o $@ $< $(filter %.o %.a,$^) $(LDFLAGS) $(LDLIBS)

$(B):
	mkdir -p $(B)

# The front-end fuzzer: libFuzzer with ASan and UBSan, seeded from examples and tests.
# It fuzzes the front end only, so it leaves out the LLVM backend, the driver that calls
# it and the commands of app/ (and does not link LLVM).
FUZZ_FLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
FUZZ_COMPILER_SRC := $(filter-out compiler/llvm_jit.c compiler/driver.c compiler/pedantic_step.c,$(COMPILER_SRC))
fuzz-build: $(B)/fuzz/fuzz_frontend
$(B)/fuzz/fuzz_frontend: tests/fuzz/fuzz_frontend.c $(LANG_SRC) $(FUZZ_COMPILER_SRC) $(GEN_SRC) $(RUNTIME_SRC)
	@mkdir -p $(dir $@)
	$(CLANG) -std=c17 $(FUZZ_FLAGS) $(CPPFLAGS) -Wno-unused-function -o $@ $^ -lopenblas -lm
FUZZ_SECONDS ?= 300
fuzz: $(B)/fuzz/fuzz_frontend
	tests/fuzz/run.sh $(B)/fuzz/fuzz_frontend $(FUZZ_SECONDS)

# Everything again under AddressSanitizer + UndefinedBehaviorSanitizer, in its own tree.
asan:
	$(MAKE) B=build/asan OPT="-O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
	    LDFLAGS="-fsanitize=address,undefined" build/asan/physc $(patsubst $(B)/%,build/asan/%,$(UNIT_TESTS))

# One command runs every layer and ends with "N passed, N failed".
test: all $(UNIT_TESTS) asan fuzz-build
	tests/run.sh --build $(B) --asan build/asan --fuzz $(B)/fuzz/fuzz_frontend --fuzz-seconds 30

# The plain layers only (no sanitizer build, no fuzzing): for a quick edit-test loop.
test-fast: all $(UNIT_TESTS)
	tests/run.sh --build $(B)

# Performance figures (docs/performance.md): compile + JIT times, and the vector field of
# the JIT against hand-written C and a dense LAPACK formulation, CHNN training speed
# against the OpenBLAS GEMM peak, every model family's training speed. Not part of `make test`.
# handwritten.c is the yardstick, so it gets the flags a careful engineer would pick.
BENCH_OBJ := $(B)/bench/bench.o $(B)/bench/dense.o $(B)/bench/handwritten.o $(B)/bench/train.o $(B)/bench/models.o $(B)/bench/dtlnn.o $(B)/bench/liet2.o $(B)/bench/scale.o
$(B)/bench/%.o: tests/bench/%.c $(B)/parser.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -Iapp $(CFLAGS) -DBENCH_LLVM_VERSION='"$(shell $(LLVM_CONFIG) --version)"' -c -o $@ $<
$(B)/bench/handwritten.o: tests/bench/handwritten.c $(B)/parser.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) -std=c17 -O2 -march=native -g -Wall -Wextra -MMD -MP -c -o $@ $<
$(B)/bench/bench: $(BENCH_OBJ) $(FRONT_OBJ) $(B)/app/trained.o $(B)/libphysrt.a
	$(CC) $(CFLAGS) -o $@ $^ $(LDFLAGS) $(LDLIBS)
bench: $(B)/bench/bench
	OPENBLAS_NUM_THREADS=1 $(B)/bench/bench $(PARTS)

clean:
	rm -rf build

-include $(shell find $(B) -name '*.d' 2>/dev/null)
