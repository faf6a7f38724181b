# planner: the two set-up commands are `make run` and `make test`.
PRESET  ?= default
BUILD   := build/$(PRESET)
PLANNER := $(BUILD)/planner
JOBS    ?= $(shell nproc)

.PHONY: all bootstrap configure build build-planner run test bench asan clean models

all: build

bootstrap:
	bash tools/bootstrap.sh

configure: bootstrap
	cmake --preset $(PRESET) >/dev/null

build: configure
	cmake --build --preset $(PRESET) -j $(JOBS)

# Only the planner binary and the libraries it links (no test targets).
build-planner: configure
	cmake --build --preset $(PRESET) -j $(JOBS) --target planner

# The main job on a bundled model: search the fastest layout on 8 A100s and
# write the plan into the build folder (ours to replace). Builds only the
# planner binary; `make test` builds the rest.
run: build-planner
	$(PLANNER) search models/gpt2-small.onnx --devices 8 --global-batch 64 -o $(BUILD)/plan.json --force

test: build
	ctest --preset $(PRESET) -j $(JOBS)

asan:
	$(MAKE) test PRESET=asan

# Benchmarks (release build), JSON on stdout and in build/release/bench.json;
# the executor's predicted-vs-measured table in build/release/bench-executor.json
# and docs/validation-executor.md (BENCH_EXECUTOR=0 skips it); `planner
# validate`'s measured speedups in build/release/bench-validate.json and
# docs/validation-speedup.md (BENCH_VALIDATE=0 skips it).
bench: bootstrap
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)
	bash tools/bench.sh build/release/planner | tee build/release/bench.json
	if [ "$${BENCH_EXECUTOR:-1}" != 0 ]; then bash tools/bench_executor.sh build/release/planner \
	  --doc docs/validation-executor.md | tee build/release/bench-executor.json; fi
	if [ "$${BENCH_VALIDATE:-1}" != 0 ]; then tools/validate-speedup build/release/planner \
	  --doc docs/validation-speedup.md | tee build/release/bench-validate.json; fi

# Regenerates the bundled shape-only models from `planner model`.
models: build-planner
	bash tools/make-models.sh $(PLANNER)

clean:
	rm -rf build
