#!/usr/bin/env bash
# make bench-llamacpp: llama.cpp (the issue #6 bar) and the CPU engine on the
# same GGUF files, on the same threads, in rounds that alternate which of the
# two goes first, so both see the same state of a shared host; then a table
# of the medians and of the ratios edgectl / llama.cpp taken within rounds.
#
# Files (MODELS, default all): tq2_0 (the generated BitNet-2B TQ2_0 file with
# its F16 tied head, the engine using it as stored: the same bytes on both
# sides), tq2_0-head4 (the same file, the engine on its default head for
# ternary models: 4-bit with exact candidates, q4x; llama.cpp as in tq2_0),
# tq2_0-head2 (not in the default list: the same, the engine on the 2-bit
# head with exact candidates, EDGECTL_HEAD=q2x),
# q4_k_m, q8_0, f16 (the generated 0.43 B llama,
# engine/cpu/quant_bench_test.go). llama.cpp comes from npm (node-llama-cpp's
# prebuilt CPU binaries; node and npm must be installed); it needs a
# vocabulary in the file, so it reads a copy with a placeholder one
# (addvocab.py), the tensors unchanged.
#
#   ROUNDS=2 MODELS="q4_k_m q8_0" RUNS=3 THREADS=2 make bench-llamacpp
#
# RUNS: llama.cpp's 64-token prefill + 64-token decode runs per round; the
# engine does the same work per round (RUNS prefills, RUNS·64 decode tokens).
set -euo pipefail
ROUNDS=${ROUNDS:-2}
RUNS=${RUNS:-3}
MODELS=${MODELS:-tq2_0 tq2_0-head4 q4_k_m q8_0 f16}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
. "$ROOT/scripts/llamacpp-peer/common.sh"

# The engine's side of the names and the thread count, read from its
# benchmarks so that they have one home.
VERSION=$(const benchVersion bench_test.go)
GEN=$(const llamaGen quant_bench_test.go)
ENGINE_THREADS=$(const benchThreads bench_test.go)
STEPS=$(const decodeSteps bench_test.go)
THREADS=${THREADS:-$ENGINE_THREADS}
if [ -z "$VERSION" ] || [ -z "$GEN" ] || [ -z "$ENGINE_THREADS" ] || [ -z "$STEPS" ]; then
	echo "bench-llamacpp: cannot read benchVersion, llamaGen, benchThreads or decodeSteps from $CPU/*bench_test.go; update const() in scripts/llamacpp-peer/common.sh" >&2
	exit 1
fi
if [ "$THREADS" != "$ENGINE_THREADS" ]; then
	echo "bench-llamacpp: THREADS=$THREADS but the engine's benchmarks run benchThreads=$ENGINE_THREADS (engine/cpu/bench_test.go); set THREADS=$ENGINE_THREADS or change benchThreads" >&2
	exit 1
fi

# file FILE → the generated GGUF and the engine's benchmark suffix.
file() {
	case $1 in
	tq2_0) echo "$BENCH/$VERSION/bitnet2b-tq2_0.gguf TQ2_0F16Head" ;;
	tq2_0-head4) echo "$BENCH/$VERSION/bitnet2b-tq2_0.gguf TQ2_0" ;;
	tq2_0-head2) echo "$BENCH/$VERSION/bitnet2b-tq2_0.gguf TQ2_0Q2xHead" ;;
	q4_k_m) echo "$BENCH/$VERSION/llama0.4b-$GEN-Q4_K_M.gguf LlamaQ4_K_M" ;;
	q8_0) echo "$BENCH/$VERSION/llama0.4b-$GEN-Q8_0.gguf LlamaQ8_0" ;;
	f16) echo "$BENCH/$VERSION/llama0.4b-$GEN-F16.gguf LlamaF16" ;;
	*)
		echo "bench-llamacpp: unknown file '$1' in MODELS (want tq2_0, tq2_0-head4, tq2_0-head2, q4_k_m, q8_0, f16)" >&2
		exit 1
		;;
	esac
}
for m in $MODELS; do file "$m" >/dev/null; done

mkdir -p "$BENCH"
# One test binary for every round: the engine's sources may change while
# this runs, and a build per round would time the compiler too.
TESTBIN=$BENCH/engine-cpu.test
echo "==> go test -c ./engine/cpu"
(cd "$ROOT" && go test -c -o "$TESTBIN" ./engine/cpu)
engine() { (cd "$CPU" && "$TESTBIN" -test.run '^$' -test.bench "$1" -test.benchtime "$2"); }

install_peer
cp "$HERE/bench.mjs" "$PEER/bench.mjs"
for m in $MODELS; do
	read -r gguf bench < <(file "$m")
	if [ ! -f "$gguf" ]; then
		echo "==> generating $gguf"
		engine "^BenchmarkPrefill$bench\$" 1x >/dev/null
	fi
	if [ ! -f "$PEER/$m.gguf" ] || [ "$gguf" -nt "$PEER/$m.gguf" ]; then
		python3 "$HERE/addvocab.py" "$gguf" "$PEER/$m.gguf"
	fi
done

RECORDS=$(mktemp "$BENCH/records.XXXXXX")
trap 'rm -f "$RECORDS"' EXIT
# peer and ours print their side's lines and append its records
# (FILE ROUND SIDE KIND TOK/S) to $RECORDS for summary.mjs.
peer() { # FILE ROUND
	(cd "$PEER" && node bench.mjs "$1.gguf" "$RUNS" "$THREADS") |
		awk -v f="$1" -v r="$2" -v rec="$RECORDS" '{ print } /^llama.cpp:/ {
			print f, r, "llama.cpp prefill", $3 >>rec; print f, r, "llama.cpp decode", $6 >>rec }'
}
ours() { # FILE ROUND BENCH
	{
		engine "^BenchmarkDecode$3\$" "$((RUNS * 64 / STEPS))x"
		engine "^BenchmarkPrefill$3\$" "${RUNS}x"
	} | awk -v f="$1" -v r="$2" -v rec="$RECORDS" '
		/^(goos|goarch|pkg|cpu):|^PASS$|^--- BENCH/ { next }
		!/^Benchmark/ { # once per round, the load average aside
			key = $0; sub(/, load average .*/, "", key)
			if (!seen[key]++) print
			next
		}
		{
			kind = $1 ~ /^BenchmarkDecode/ ? "decode" : "prefill"
			printf "edgectl:   %s", $1
			for (i = 3; i < NF; i += 2) {
				if ($(i+1) ~ /^(tok\/s|read-GB\/s|roofline-ratio)$/) printf "  %s %s", $i, $(i+1)
				if ($(i+1) == "tok/s") print f, r, "edgectl", kind, $i >>rec
			}
			print ""
		}'
}
for r in $(seq 1 "$ROUNDS"); do
	for m in $MODELS; do
		read -r gguf bench < <(file "$m")
		echo "==> round $r/$ROUNDS, $m ($(basename "$gguf")), $THREADS threads, load average $(cut -d' ' -f1-3 /proc/loadavg)"
		if [ $((r % 2)) = 1 ]; then
			peer "$m" "$r"
			ours "$m" "$r" "$bench"
		else
			ours "$m" "$r" "$bench"
			peer "$m" "$r"
		fi
	done
done
echo
echo "==> tok/s, medians over $ROUNDS round(s) ($RUNS llama.cpp runs each), $THREADS threads; ratio = edgectl / llama.cpp within a round, median; load average $(cut -d' ' -f1-3 /proc/loadavg)"
node "$HERE/summary.mjs" "$RECORDS"
