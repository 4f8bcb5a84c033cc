# edgectl — see README.md. Every target works offline once the Go module
# cache is filled (the first run fetches modules through the Go proxy).
GO        ?= go
BIN       := bin/edgectl
PKGS      := ./...
FUZZTIME  ?= 3s
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS   := -s -w -X github.com/edgectl/edgectl/internal/version.Version=$(VERSION)
export CGO_ENABLED := 0

.PHONY: all build test fuzz test-arm64 test-browser test-js-clients tokenizers-ref onnx-check ternary-fixture lint bench bench-llamacpp bench-embed-llamacpp demo cross loadtest clean

all: build

build: ## the edgectl binary for this machine
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/edgectl

test: ## vet, formatting, and every test (offline, a few minutes on 2 cores)
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -count=1 -timeout 15m $(PKGS)
	@$(MAKE) --no-print-directory fuzz

# Every FuzzXxx in the tree runs for FUZZTIME: packages with a `func Fuzz`
# in a _test.go file are found by grep and their targets by `go test -list`,
# so new targets join by themselves. Seeds and testdata/fuzz corpora already
# ran as plain tests above. Locally: make fuzz FUZZTIME=30s.
fuzz: ## each fuzz target for FUZZTIME (3s): the format readers, chat templates
	@dirs=$$(grep -rl --include='*_test.go' --exclude-dir=testdata --exclude-dir=.git '^func Fuzz' . | xargs -r -n1 dirname | sort -u); \
	list=$$($(GO) test -list '^Fuzz' $$dirs) || { echo "$$list"; exit 1; }; \
	echo "$$list" | awk '/^Fuzz/ { names = names " " $$1; next } /^ok/ { if (names != "") print $$2 names; names = "" }' | \
	while read pkg names; do for name in $$names; do \
	  echo "fuzz $$pkg $$name ($(FUZZTIME))"; \
	  out=$$($(GO) test -run='^$$' -fuzz="^$$name\$$" -fuzztime=$(FUZZTIME) $$pkg 2>&1) || case "$$out" in \
	    *"Failing input written"*) echo "$$out"; exit 1 ;; \
	    *"context deadline exceeded"*) echo "  (Go's fuzztime deadline race, go.dev/issue/75804: no failing input; ignored)" ;; \
	    *) echo "$$out"; exit 1 ;; \
	  esac; \
	done; done

test-arm64: ## the engine, format and quant tests built for linux/arm64, run under qemu-user (apt-get install qemu-user)
	GOARCH=arm64 $(GO) test -count=1 -exec qemu-aarch64 ./engine/cpu ./engine/tokenizer ./format/... ./quant ./sherry

test-browser: ## the chat page in headless Chromium (installs Debian's chromium first: scripts/install-chromium.sh)
	./scripts/install-chromium.sh
	$(GO) test -count=1 -timeout 5m -run 'TestChatPage' ./serve/

test-js-clients: ## serve through the official JS clients openai, ollama, @anthropic-ai/sdk (npm, into ~/.cache/edgectl-test/js-clients: scripts/install-js-clients.sh)
	./scripts/install-js-clients.sh
	$(GO) test -count=1 -run 'TestJSClients' ./serve/

tokenizers-ref: ## WordPiece ids against Hugging Face's own tokenizers (npm, into ~/.cache/edgectl-test/node: scripts/install-tokenizers-ref.sh)
	./scripts/install-tokenizers-ref.sh
	$(GO) test -count=1 -run 'TestWordPieceReference|TestBertUnicodeTables' ./engine/tokenizer/

onnx-check: ## ONNX round trip and every rknn shard against Debian's python3-onnx checker (installs it first: scripts/install-onnx-check.sh)
	./scripts/install-onnx-check.sh
	$(GO) test -count=1 ./format/onnx/ ./rknn/...

ternary-fixture: ## retrain the ternary-trained BitNet fixtures testdata/models/bitnet-{ternary,sherry}-tiny (Debian's python3-torch on OpenBLAS, installed first; ~10 min each on 2 cores)
	@dpkg -s python3-torch python3-numpy libopenblas0-pthread >/dev/null 2>&1 || ./scripts/apt-install.sh ternary-fixture python3-torch python3-numpy libopenblas0-pthread
	OPENBLAS_NUM_THREADS=2 /usr/bin/python3 scripts/train-ternary.py --variant absmean --out testdata/models/bitnet-ternary-tiny --corpus-cache $(HOME)/.cache/edgectl-test/ternary-corpus
	OPENBLAS_NUM_THREADS=2 /usr/bin/python3 scripts/train-ternary.py --variant sherry --out testdata/models/bitnet-sherry-tiny --corpus-cache $(HOME)/.cache/edgectl-test/ternary-corpus

lint: ## gofmt + go vet (no third-party linters needed)
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet $(PKGS)

bench: ## benchmarks: engine tokens/s vs roofline, pack and patch GB/s vs plain I/O, pull vs plain GET
	$(GO) test -run '^$$' -bench . -benchtime 3x -timeout 60m ./format/... ./patch/... ./quant/... ./hub/... ./engine/... ./prep/...

bench-llamacpp: ## the peer: llama.cpp (prebuilt, from npm) and the engine on the same TQ2_0, Q4_K_M, Q8_0 and F16 GGUFs, alternating (MODELS=, ROUNDS=)
	./scripts/bench-llamacpp.sh

bench-embed-llamacpp: ## the peer for embeddings: llama.cpp's embedding path and the engine on one MiniLM-shaped BERT GGUF, embeddings/s, alternating (ROUNDS=, RUNS=)
	./scripts/bench-embed-llamacpp.sh

cross: ## static linux/arm64 binary for the boards
	GOOS=linux GOARCH=arm64 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o bin/edgectl-linux-arm64 ./cmd/edgectl
	@file bin/edgectl-linux-arm64 2>/dev/null || true

demo: build ## prep a tiny model on the embedded CPU engine, serve it, ask it something
	./scripts/demo.sh $(BIN)

loadtest: ## 100 concurrent clients across 3 models on a 2-model budget
	$(GO) test -run '^$$' -bench BenchmarkLoad100Clients -benchtime 1x -timeout 20m ./serve/
	$(GO) test -run '^$$' -bench BenchmarkServerOverhead -benchtime 100x -timeout 20m ./serve/

clean:
	rm -rf bin .demo
