# Hephaestus developer and CI entry points. Everything goes through the go
# command; PostgreSQL for the tests is started by cmd/pgcluster.
GO ?= go

# Development webhook secrets shared by `run` and `demo` (and exported only for them), so the
# demo's signatures match the server's; the caller's own values win.
HEPHAESTUS_GITHUB_WEBHOOK_SECRET ?= dev-github-webhook-secret
HEPHAESTUS_SLACK_SIGNING_SECRET ?= dev-slack-signing-secret

.PHONY: build generate hygiene corpus test test-inner fuzz-smoke run bench soak demo console-screenshot migrate clean

## build: compile the server to bin/hephaestus
build:
	$(GO) build -o bin/hephaestus ./cmd/hephaestus

## generate: regenerate wire_gen.go (dependency injection) and the typed API client
## client/hxapi/hxapi.gen.go from the API document (oapi-codegen, configured by
## client/hxapi/oapi-codegen.yaml)
generate:
	$(GO) tool wire ./bootstrap/...
	$(GO) generate ./client/...

## hygiene: gofmt, go mod tidy, go vet, staticcheck, Wire and API client freshness; every tool is
## pinned in go.mod (`tool` lines), so a fresh machine needs nothing but Go
hygiene:
	@unformatted=$$(gofmt -l .); if [ -n "$$unformatted" ]; then \
		echo "gofmt: these files need formatting:"; echo "$$unformatted"; exit 1; fi
	$(GO) mod tidy -diff
	$(GO) vet ./...
	$(GO) tool staticcheck ./...
	@$(GO) tool wire diff ./bootstrap/... || { echo "bootstrap/wire_gen.go is stale: run 'make generate'"; exit 1; }
	@$(GO) tool oapi-codegen -config client/hxapi/oapi-codegen.yaml adapters/http/apidoc/openapi.yaml \
		| diff -u client/hxapi/hxapi.gen.go - >/dev/null \
		|| { echo "client/hxapi/hxapi.gen.go is stale (or the document no longer generates): run 'make generate'"; exit 1; }

## corpus: fetch GitHub's documented example payloads (the pinned, checksummed
## @octokit/webhooks-examples package, through npm) into .cache/corpus/github, once; the specs,
## the bench's mix and the soak read them from there (specs/ghcorpus)
corpus:
	$(GO) run ./cmd/corpus

## test: hygiene, race-enabled tests and a fuzz smoke run against a throwaway
## PostgreSQL cluster that is always stopped and removed afterwards
test: corpus
	$(GO) run ./cmd/pgcluster run -- $(MAKE) test-inner

## TEST_PACKAGES: how many test packages `test` runs at once (go test -p; the go command's
## default is one per core). A spec package spends most of its time waiting on PostgreSQL, on
## timers and on the browser (the admission, failover and console specs keep a core busy 20 to
## 50 % of their run, PostgreSQL included), so twice the cores keeps the machine busy.
TEST_PACKAGES ?= $(shell echo $$(( 2 * $$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1) )))

## test-inner: the body of `test`; needs HEPHAESTUS_TEST_DATABASE_URL
## (set by `make test`, or by hand against `go run ./cmd/pgcluster up`)
test-inner:
	@test -n "$$HEPHAESTUS_TEST_DATABASE_URL" || { \
		echo "test-inner needs HEPHAESTUS_TEST_DATABASE_URL; use 'make test'" >&2; exit 2; }
	$(MAKE) hygiene
	$(GO) test -race -count=1 -timeout 20m -p $(TEST_PACKAGES) ./...
	$(MAKE) fuzz-smoke

## fuzz-smoke: run every fuzz target briefly (none is fine). A count of inputs rather than a
## duration: a time-bounded -fuzztime can end in a spurious "context deadline exceeded"
## (golang/go#75804) on a busy machine.
FUZZTIME ?= 20000x
fuzz-smoke:
	@set -e; \
	for file in $$(grep -rl '^func Fuzz' --include='*_test.go' --exclude-dir=.git --exclude-dir=vendor --exclude-dir=testdata . || true); do \
		pkg=$$(dirname "$$file"); \
		for name in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "fuzz-smoke: $$name in $$pkg"; \
			$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) "$$pkg"; \
		done; \
	done

## run: start the server with console logs on 127.0.0.1:8080 (embedded database unless
## DATABASE_URL is set; with DATABASE_URL the server refuses the development secrets above)
run: HEPHAESTUS_HTTP_ADDR ?= 127.0.0.1:8080
run: export HEPHAESTUS_HTTP_ADDR := $(HEPHAESTUS_HTTP_ADDR)
run: export HEPHAESTUS_LOG_FORMAT = console
run: export HEPHAESTUS_GITHUB_WEBHOOK_SECRET := $(HEPHAESTUS_GITHUB_WEBHOOK_SECRET)
run: export HEPHAESTUS_SLACK_SIGNING_SECRET := $(HEPHAESTUS_SLACK_SIGNING_SECRET)
run:
	$(GO) run ./cmd/hephaestus serve

## bench: run the benchmark against a throwaway durable cluster
bench: corpus
	$(GO) run ./cmd/pgcluster run -durable -- $(GO) run ./cmd/bench

## soak: the server as `serve` wires it, on a throwaway durable cluster, fed the four-provider
## mix at 60 % of its measured capacity for SOAK_MINUTES (default 10) with short retention
## windows; writes soak-results.json and soak-results.svg and judges the flatness criteria
SOAK_MINUTES ?= 10
soak: corpus
	$(GO) run ./cmd/pgcluster run -durable -- $(GO) run ./cmd/bench -soak -soak-minutes $(SOAK_MINUTES)

## demo: run the demo
demo: export HEPHAESTUS_GITHUB_WEBHOOK_SECRET := $(HEPHAESTUS_GITHUB_WEBHOOK_SECRET)
demo: export HEPHAESTUS_SLACK_SIGNING_SECRET := $(HEPHAESTUS_SLACK_SIGNING_SECRET)
demo:
	$(GO) run ./cmd/demo

## console-screenshot: start a server on a throwaway cluster, fill a demo workspace (cmd/demo)
## and write docs/console.png and docs/console-dead-letter.png with headless Chromium
console-screenshot:
	$(GO) run ./cmd/pgcluster run -- $(GO) run ./cmd/consoleshot

## migrate: apply database migrations
migrate:
	$(GO) run ./cmd/hephaestus migrate

## clean: remove build and benchmark outputs and the fetched corpus (never .data)
clean:
	rm -rf bin bench-results.json .cache
