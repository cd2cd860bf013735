# kedge — see README.md. `make demo` and `make test` work on a fresh machine.
GO            ?= go
BIN           := bin/kedge
VERSION       ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS       := -s -w -X main.version=$(VERSION)
# The integration tests run a real kube-apiserver + etcd built from the Go
# module proxy (internal/testing/testbin/testbin.sh) and cached outside the repository.
TESTBIN_CACHE ?= $(HOME)/.cache/kedge-testbin
# Fuzz budgets are counts of executions, not durations: Go 1.26's fuzz
# coordinator can report a duration's own deadline as a failure
# (golang/go#75804, fixed in Go 1.27). FUZZSCALE multiplies every budget.
FUZZSCALE     ?= 1
# Short runs spend their time fuzzing, not minimising each new input.
FUZZMINIMIZE  ?= 100x
DEMO_CLUSTER  := testdata/demo/cluster
DEMO_REPO     := testdata/demo/gitops
# The demo cluster applies from two repositories: the platform one and the
# reviews team's; offline, each checkout is named as the cluster names it.
DEMO_REPOS    := --repo example-org/gitops=$(DEMO_REPO) --repo example-org/team-reviews=testdata/demo/team-reviews

.PHONY: all build test unit fuzz lint demo bench chaos testbin clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/kedge

lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...

testbin:
	@bash internal/testing/testbin/testbin.sh >/dev/null

# Everything: lint, unit and integration tests against the real control
# plane, the fault matrix with one kill per kind of step (`make chaos` kills
# at every step), and short fuzz runs of the parsers and the editor.
test: lint testbin
	KUBEBUILDER_ASSETS=$$(bash internal/testing/testbin/testbin.sh | tail -n1) KEDGE_REQUIRE_TESTBIN=$${KEDGE_REQUIRE_TESTBIN:-1} \
		$(GO) test -count=1 -timeout 25m ./...
	$(MAKE) fuzz

unit:
	$(GO) test -short ./...

fuzz:
	$(call fuzz-one,FuzzSetPodTemplateAnnotations,./internal/yamledit,60000)
	$(call fuzz-one,FuzzAddKustomizationPatch,./internal/yamledit,60000)
	$(call fuzz-one,FuzzSetReleaseRestarts,./internal/yamledit/helmedit,60000)
	$(call fuzz-one,FuzzRemoveMetadataLabel,./internal/yamledit,30000)
	$(call fuzz-one,FuzzReadSnapshot,./internal/cluster/snapshot,10000)
	$(call fuzz-one,FuzzStreamingDecode,./internal/cluster/snapshot,10000)
	$(call fuzz-one,FuzzEscape,./internal/dashboard,30000)
	$(call fuzz-one,FuzzHostileTree,./internal/testing/chaos,500)

# $(1) target, $(2) package, $(3) executions at FUZZSCALE=1 (about ten
# seconds each on a 2-core machine).
fuzz-one = $(GO) test -run='^$$' -fuzz='^$(1)$$' -fuzztime=$$(( $(3) * $(FUZZSCALE) ))x -fuzzminimizetime=$(FUZZMINIMIZE) $(2)

demo: build
	@echo "== kedge plan: the sample cluster against its two GitOps repositories (platform and reviews team) =="
	@KEDGE_CLUSTER=prod-eu-1 $(BIN) plan --snapshot $(DEMO_CLUSTER) $(DEMO_REPOS) --output table
	@echo
	@echo "== kedge run --once, offline: GitHub emulated, each repository as a local bare clone =="
	@$(GO) run ./internal/testing/demo
	@echo
	@echo "== the same drift as a dashboard (kedge plan --output markdown) =="
	@KEDGE_CLUSTER=prod-eu-1 $(BIN) plan --snapshot $(DEMO_CLUSTER) $(DEMO_REPOS) --output markdown
	@echo
	@echo "== sidecar -> ambient: with ambient mode installed, a migration policy moves the search team out of sidecars =="
	@$(GO) run ./internal/testing/demo -ambient search

bench:
	$(GO) run ./internal/testing/benchreport -out docs/benchmarks.md

# The fault matrix, with the process killed at every step of every PR, and
# the API server restarted under the service's watches: prints fault,
# cycles to converge, duplicates, lost commits.
chaos: testbin
	@mkdir -p bin && rm -f bin/chaos-table.txt bin/chaos-live.txt
	@KEDGE_CHAOS_FULL=1 KEDGE_CHAOS_TABLE=$(CURDIR)/bin/chaos-table.txt \
		$(GO) test -count=1 -timeout 20m -run '^TestFaultMatrix$$' ./internal/testing/chaos/; \
		matrix=$$?; \
		KUBEBUILDER_ASSETS=$$(bash internal/testing/testbin/testbin.sh | tail -n1) KEDGE_REQUIRE_TESTBIN=1 \
		KEDGE_CHAOS_LIVE_TABLE=$(CURDIR)/bin/chaos-live.txt \
		$(GO) test -count=1 -timeout 10m -run '^TestAPIServerRestartMidWatch$$' ./internal/testing/integration/ >/dev/null; \
		live=$$?; cat bin/chaos-table.txt bin/chaos-live.txt 2>/dev/null; \
		[ $$matrix -eq 0 ] && [ $$live -eq 0 ]

clean:
	rm -rf bin
