// Package patch repairs Hugging Face checkpoints for vendor NPU toolchains:
// config.json fixes (eos_token_id arrays, KV-cache lengths) and missing
// LayerNorm tensors injected into safetensors shards.
package patch

// KVCacheLen returns the largest length of the form 128·k−1 that is ≤ n
// (2048 → 2047, 1024 → 1023), or 127 for n < 127. The Axera runtime's
// attention mask has kv_cache_len+1 slots, the last for the current token,
// so the compiled length must leave one slot free inside a 128-aligned tile.
func KVCacheLen(n int) int {
	if n < 127 {
		return 127
	}
	return (n+1)/128*128 - 1
}

// IsKVCacheLen reports whether n already has the form 128·k−1.
func IsKVCacheLen(n int) bool { return n >= 127 && (n+1)%128 == 0 }
