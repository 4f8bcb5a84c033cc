# Sourced by scripts/bench-llamacpp.sh and scripts/bench-embed-llamacpp.sh
# (after they set ROOT): the paths, the pinned peer and the reading of the
# engine's benchmark constants, one home each.
NLC_VERSION=3.22.1
HERE=$ROOT/scripts/llamacpp-peer
CPU=$ROOT/engine/cpu
BENCH=${TMPDIR:-/tmp}/edgectl-bench
PEER=$BENCH/llamacpp

# const NAME FILE: the value of the Go constant NAME in engine/cpu/FILE.
const() { sed -n "s/^[[:space:]]*\(const \)\{0,1\}$1 *= *\"\{0,1\}\([^\"]*\)\"\{0,1\}$/\2/p" "$CPU/$2" | head -1; }

# install_peer: node-llama-cpp, whose npm packages carry llama.cpp's
# prebuilt CPU builds (nothing is compiled), into $PEER unless it is there.
install_peer() {
	if [ ! -f "$PEER/node_modules/node-llama-cpp/package.json" ]; then
		echo "==> npm install node-llama-cpp@$NLC_VERSION into $PEER"
		mkdir -p "$PEER"
		(cd "$PEER" && NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --silent --no-audit --no-fund "node-llama-cpp@$NLC_VERSION")
	fi
}
