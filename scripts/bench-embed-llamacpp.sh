#!/usr/bin/env bash
# make bench-embed-llamacpp: embeddings/s of a MiniLM-shaped BERT (6 layers,
# hidden 384, 12 heads, FFN 1536; random weights, F32) on one 128-token
# input at a time, by the CPU engine and by llama.cpp's embedding path
# (node-llama-cpp's createEmbeddingContext / getEmbeddingFor, the build
# make bench-llamacpp uses) on the same GGUF and threads, in rounds that
# alternate which of the two goes first; then the medians and the median
# of the rounds' ratios edgectl / llama.cpp (summary.mjs). The GGUF is
# written by the engine's BenchmarkEmbedMiniLMGGUF (internal/testmodel
# WriteBert: llama.cpp's bert tensor names and a WordPiece vocabulary),
# which also reports the cosine between its vector and llama.cpp's for the
# same ids (1.000: the two computed the same embedding).
#
#   ROUNDS=4 RUNS=40 THREADS=1 make bench-embed-llamacpp
#
# RUNS: embeddings per side per round. THREADS: both sides' threads (default
# the engine's benchThreads, 2); on a shared host 1 is the steadier
# comparison, since two threads meeting at every product lose most to other
# load (llama.cpp's spinning barrier more than the engine). BATCH=1 then
# also runs the engine's BenchmarkEmbedMiniLMBatch (requests of 64 inputs
# of 16, 64 and 128 tokens, packed and one at a time) on the same threads.
# llama.cpp's side stays one input per call: node-llama-cpp's embedding
# context evaluates one sequence and reads sequence 0's pooled vector
# (llama/addon/AddonContext.cpp GetEmbedding), so it cannot batch inputs.
set -euo pipefail
ROUNDS=${ROUNDS:-4}
RUNS=${RUNS:-40}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/llamacpp-peer/common.sh"

# The engine's thread count and cache key have one home, its benchmarks.
VERSION=$(const benchVersion bench_test.go)
ENGINE_THREADS=$(const benchThreads bench_test.go)
THREADS=${THREADS:-$ENGINE_THREADS}
if [ -z "$VERSION" ] || [ -z "$ENGINE_THREADS" ]; then
	echo "bench-embed-llamacpp: cannot read benchVersion or benchThreads from $CPU/bench_test.go; update const() in scripts/llamacpp-peer/common.sh" >&2
	exit 1
fi
GGUF=$BENCH/$VERSION/minilm-l6-f32.gguf
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	echo "bench-embed-llamacpp: node and npm are needed for llama.cpp's side (e.g. apt-get install nodejs npm)" >&2
	exit 1
fi

mkdir -p "$BENCH"
TESTBIN=$BENCH/engine-cpu-embed.test
echo "==> go test -c ./engine/cpu"
(cd "$ROOT" && go test -c -o "$TESTBIN" ./engine/cpu)
engine() { (cd "$CPU" && "$TESTBIN" -test.run '^$' -test.bench '^BenchmarkEmbedMiniLMGGUF$' -test.benchtime "$1"); }

install_peer
cp "$HERE/embed.mjs" "$PEER/embed.mjs"
if [ ! -f "$GGUF" ]; then
	echo "==> generating $GGUF"
	engine 1x >/dev/null
fi

RECORDS=$(mktemp "$BENCH/records.XXXXXX")
VECTOR=$(mktemp "$BENCH/vector.XXXXXX")
trap 'rm -f "$RECORDS" "$VECTOR"' EXIT
peer() { # ROUND
	(cd "$PEER" && node embed.mjs "$GGUF" "$RUNS" "$THREADS" "$VECTOR") |
		awk -v r="$1" -v rec="$RECORDS" '{ print } /^llama.cpp:/ { print "minilm", r, "llama.cpp embed", $3 >>rec }'
}
ours() { # ROUND
	EDGECTL_BENCH_THREADS=$THREADS EDGECTL_PEER_VECTOR=$([ -s "$VECTOR" ] && echo "$VECTOR") engine "${RUNS}x" |
		awk -v r="$1" -v rec="$RECORDS" '
		/^Benchmark/ {
			printf "edgectl:   embed"
			for (i = 3; i < NF; i += 2) {
				printf " %s %s", $i, $(i+1)
				if ($(i+1) == "embeddings/s") print "minilm", r, "edgectl embed", $i >>rec
			}
			print ""
		}'
}
for r in $(seq 1 "$ROUNDS"); do
	echo "==> round $r/$ROUNDS, $(basename "$GGUF"), $THREADS threads, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ $((r % 2)) = 1 ]; then
		peer "$r"
		ours "$r"
	else
		ours "$r"
		peer "$r"
	fi
done
echo
echo "==> embeddings/s (128 tokens each), medians over $ROUNDS round(s) of $RUNS; ratio = edgectl / llama.cpp within a round, median; load average $(cut -d' ' -f1-3 /proc/loadavg)"
node "$HERE/summary.mjs" "$RECORDS"
if [ "${BATCH:-0}" = 1 ]; then
	echo
	echo "==> edgectl, requests of 64 inputs, packed and alone, $THREADS threads, load average $(cut -d' ' -f1-3 /proc/loadavg)"
	(cd "$CPU" && EDGECTL_BENCH_THREADS=$THREADS "$TESTBIN" -test.run '^$' -test.bench '^BenchmarkEmbedMiniLMBatch$' -test.benchtime 3x) | grep -E '^Benchmark|load average'
fi
