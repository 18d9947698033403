# Graphmill. `make help` lists the targets.
.DEFAULT_GOAL := help
GO ?= go
TEST_FLAGS ?= -count=1 -timeout 30m
FUZZTIME ?= 30s

.PHONY: help postgres chromium run build test test/drills test/race lint bench bench/ratelimit fuzz tidy screenshots

help: ## List the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z\/_-]+:.*## / {printf "  %-12s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

postgres: ## Install the PostgreSQL server binaries when none are found (Debian/Ubuntu)
	@if command -v pg_ctl >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; else \
		echo "PostgreSQL server binaries not found: installing the postgresql package"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q postgresql; \
	fi

# The console's browser test (cmd/graphmill TestConsoleBrowser) drives
# Debian's chromium with playwright-core; installing it adds about 20 s
# (apt-get install, package lists already fetched).
chromium: ## Install Debian's chromium for the console's browser test when missing
	@if [ -x /usr/bin/chromium ]; then :; else \
		echo "chromium not found: installing the chromium package"; \
		if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi; \
		$$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium; \
	fi

run: postgres ## Run the server on the embedded PostgreSQL (data in ./.graphmill)
	$(GO) run ./cmd/graphmill serve

build: ## Build ./bin/graphmill
	$(GO) build -o bin/graphmill ./cmd/graphmill

# make test runs the packages and the drills as one go test run (one
# gotestsum summary of every test at the end), the drills first: they take
# the longest, and wait more than they compute. The packages share one
# PostgreSQL cluster: withpg starts it, hands it to them in
# GRAPHMILL_TEST_DATABASE_URL and stops it when the run ends, however it ends.
TEST_PARALLEL ?= -p 4 -parallel 4
test: postgres chromium ## Run every test and the drills against one throwaway PostgreSQL cluster
	@$(GO) build -o bin/withpg ./internal/pgtest/withpg
	bin/withpg $(GO) tool gotestsum --format pkgname-and-test-fails -- $(TEST_FLAGS) $(TEST_PARALLEL) -tags drills \
		./test/drills/ $$($(GO) list ./... | grep -v /test/drills)

test/drills: postgres ## Run the drills on the real binary: kill -9, replicas under load, PostgreSQL restart (a few minutes)
	$(GO) tool gotestsum --format standard-verbose -- $(TEST_FLAGS) -tags drills ./test/drills/

test/race: postgres chromium ## Run every test with the race detector
	$(GO) tool gotestsum --format pkgname-and-test-fails -- $(TEST_FLAGS) -race ./...

# The README's picture of graphmill ingest: the command run on a
# pseudo-terminal, its output replayed in xterm.js in chromium
# (cmd/graphmill TestCLIIngestScreenshot, which make test runs without
# writing the picture).
screenshots: postgres chromium ## Regenerate docs/images/cli-ingest.png
	GRAPHMILL_SCREENSHOTS=1 $(GO) test ./cmd/graphmill -run '^TestCLIIngestScreenshot$$' -count=1

lint: ## Run golangci-lint (pinned in tools/go.mod)
	$(GO) tool -modfile=tools/go.mod golangci-lint run ./...

# deadcode fails on any function that the programs (./cmd, ./bench) cannot
# reach, or that neither they nor the tests reach.
.PHONY: deadcode
deadcode: ## Report unreachable functions (x/tools deadcode, pinned in tools/go.mod); fails on any
	@prod=$$($(GO) tool -modfile=tools/go.mod deadcode ./cmd/... ./bench/...) || exit 1; \
	all=$$($(GO) tool -modfile=tools/go.mod deadcode -test ./...) || exit 1; \
	if [ -n "$$prod$$all" ]; then printf '%s\n' "$$prod" "$$all" | sort -u | grep .; exit 1; fi

bench: postgres ## Run the Go benchmarks
	$(GO) test -run '^$$' -bench . -benchmem ./...

bench/ratelimit: postgres ## Extraction against a rate-limited fake provider (RPM=60 DELAY=2s DOCS=200)
	RPM=$(RPM) DELAY=$(DELAY) DOCS=$(DOCS) $(GO) test ./cmd/graphmill -run '^$$' -bench '^BenchmarkRateLimit$$' -benchtime 1x -timeout 60m -v

# A bare "context deadline exceeded" with no failing input written is a race
# in Go's fuzz coordinator at the end of -fuzztime on a loaded machine, not a
# finding: it is reported and tolerated; anything else fails.
fuzz: postgres ## Run every Go fuzz target for FUZZTIME (default 30s), one at a time
	@grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*' cmd internal | sort | \
	while IFS=: read -r file fn; do t=$${fn#func }; pkg=./$$(dirname $$file); out=$$(mktemp); \
		echo "== $$pkg $$t for $(FUZZTIME)"; \
		$(GO) test $$pkg -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) >$$out 2>&1; rc=$$?; \
		grep -v '^fuzz: elapsed' $$out; \
		if [ $$rc -ne 0 ]; then \
			if grep -q 'Failing input written' $$out || ! grep -qx '    context deadline exceeded' $$out; then rm -f $$out; exit 1; fi; \
			echo "$$t: Go's fuzz coordinator hit its deadline race at the end of FUZZTIME; no input failed"; \
		fi; \
		rm -f $$out; \
	done

tidy: ## Tidy go.mod
	$(GO) mod tidy
