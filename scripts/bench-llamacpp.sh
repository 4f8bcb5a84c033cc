#!/usr/bin/env bash
# make bench-llamacpp: llama.cpp (the issue #6 bar) and the CPU engine on the
# same TQ2_0 GGUF with its F16 tied head, on the same 2 threads, alternating
# so both see the same state of a shared host. llama.cpp comes from npm
# (node-llama-cpp's prebuilt CPU binaries; node and npm must be installed);
# it needs a vocabulary in the file, so it reads a copy with a placeholder one
# (addvocab.py), the tensors unchanged.
set -euo pipefail
NLC_VERSION=3.22.1
ROUNDS=${ROUNDS:-2}
BENCH=${TMPDIR:-/tmp}/edgectl-bench
MODEL=$BENCH/v1/bitnet2b-tq2_0.gguf
PEER=$BENCH/llamacpp
HERE=$(cd "$(dirname "$0")" && pwd)

if [ ! -f "$MODEL" ]; then
	echo "==> generating $MODEL"
	go test -run '^$' -bench 'DecodeTQ2_0F16Head$' -benchtime 1x ./engine/cpu >/dev/null
fi
if [ ! -f "$PEER/node_modules/node-llama-cpp/package.json" ]; then
	echo "==> npm install node-llama-cpp@$NLC_VERSION into $PEER"
	mkdir -p "$PEER"
	(cd "$PEER" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --silent --no-audit --no-fund "node-llama-cpp@$NLC_VERSION")
fi
if [ ! -f "$PEER/model.gguf" ] || [ "$MODEL" -nt "$PEER/model.gguf" ]; then
	python3 "$HERE/llamacpp-peer/addvocab.py" "$MODEL" "$PEER/model.gguf" 128256
fi
cp "$HERE/llamacpp-peer/bench.mjs" "$PEER/bench.mjs"
for _ in $(seq 1 "$ROUNDS"); do
	(cd "$PEER" && node bench.mjs model.gguf 3)
	go test -run '^$' -bench 'DecodeTQ2_0F16Head$|PrefillTQ2_0F16Head$' -benchtime 5x ./engine/cpu |
		awk '/^Benchmark/ { printf "edgectl:   %s", $1; for (i = 3; i < NF; i += 2) if ($(i+1) ~ /^(tok\/s|read-GB\/s|roofline-ratio)$/) printf "  %s %s", $i, $(i+1); print "" }'
done
