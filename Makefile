# The README's two commands. Both install missing Debian packages, configure and build as needed.
#   make demo   the main job (see README): builds only the dattn binary, without CUDA unless asked
#   make test   build and run every test (what CI runs)
#   make serve-demo  dattn serve on the tiny golden pipeline, requests through curl (README, "Serving")
# DATTN_CUDA=auto|on|off picks the CUDA build (auto: when nvcc is found); `make test` defaults to auto,
# `make demo` to off (the demo runs on the CPU; DATTN_CUDA=on or auto builds the CUDA kernels too).
# BUILD_DIR defaults to build.
BUILD_DIR ?= build
DEMO_CUDA := $(if $(filter command line environment,$(origin DATTN_CUDA)),$(DATTN_CUDA),off)
DATTN_CUDA ?= auto
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=

.PHONY: all deps configure configure-demo build test demo serve-demo clean sanitize fuzz

all: build

deps:
	@./scripts/install-deps.sh

# Reconfigure only when the cache is missing or the CUDA choice changed.
configure: deps
	@if [ ! -f $(BUILD_DIR)/CMakeCache.txt ] || ! grep -q "^DATTN_CUDA:STRING=$(DATTN_CUDA)$$" $(BUILD_DIR)/CMakeCache.txt; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DDATTN_CUDA=$(DATTN_CUDA) $(CMAKE_FLAGS); \
	fi

# The demo keeps a build folder that is already configured (e.g. by make test), unless DATTN_CUDA is
# given and differs; a fresh one is configured with DEMO_CUDA.
configure-demo: deps
	@if [ ! -f $(BUILD_DIR)/CMakeCache.txt ] || \
	    { [ "$(origin DATTN_CUDA)" != file ] && ! grep -q "^DATTN_CUDA:STRING=$(DEMO_CUDA)$$" $(BUILD_DIR)/CMakeCache.txt; }; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DDATTN_CUDA=$(DEMO_CUDA) $(CMAKE_FLAGS); \
	fi

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@# Passive OpenMP waits: parallel test processes on few cores must not spin against each other.
	@cd $(BUILD_DIR) && OMP_WAIT_POLICY=passive ctest --output-on-failure -j $(JOBS)

# Only what the demo runs: the dattn binary (no tests, benchmarks or, unless asked, CUDA kernels).
demo: configure-demo
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target dattn
	@./scripts/demo.sh $(BUILD_DIR)/dattn

# dattn serve on the tiny golden pipeline: requests through curl end to end, then SIGTERM.
serve-demo: configure-demo
	@cmake --build $(BUILD_DIR) -j $(JOBS) --target dattn
	@./scripts/serve-demo.sh $(BUILD_DIR)/dattn

# The CPU tests under ASan + UBSan, and each libFuzzer target for FUZZ_SECONDS seconds (clang, build-san/).
sanitize: deps
	@./scripts/sanitize.sh tests

fuzz: deps
	@./scripts/sanitize.sh fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD_DIR) build-san
