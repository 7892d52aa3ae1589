# The README's two commands. Both install missing Debian packages, configure and build as needed.
#   make demo   the main job (see README)
#   make test   build and run every test (what CI runs)
# DATTN_CUDA=auto|on|off picks the CUDA build (auto: when nvcc is found). BUILD_DIR defaults to build.
BUILD_DIR ?= build
DATTN_CUDA ?= auto
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=

.PHONY: all deps configure build test demo clean sanitize fuzz

all: build

deps:
	@./scripts/install-deps.sh

# Reconfigure only when the cache is missing or the CUDA choice changed.
configure: deps
	@if [ ! -f $(BUILD_DIR)/CMakeCache.txt ] || ! grep -q "^DATTN_CUDA:STRING=$(DATTN_CUDA)$$" $(BUILD_DIR)/CMakeCache.txt; then \
	  cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=Release -DDATTN_CUDA=$(DATTN_CUDA) $(CMAKE_FLAGS); \
	fi

build: configure
	@cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	@# Passive OpenMP waits: parallel test processes on few cores must not spin against each other.
	@cd $(BUILD_DIR) && OMP_WAIT_POLICY=passive ctest --output-on-failure -j $(JOBS)

demo: build
	@./scripts/demo.sh $(BUILD_DIR)/dattn

# The CPU tests under ASan + UBSan, and each libFuzzer target for FUZZ_SECONDS seconds (clang, build-san/).
sanitize: deps
	@./scripts/sanitize.sh tests

fuzz: deps
	@./scripts/sanitize.sh fuzz $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD_DIR) build-san
