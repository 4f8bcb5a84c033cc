package axllm

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
)

// BuildInfo is edgectl_build.json: how edgectl built the directory. axllm
// does not read it; Describe reports the context length and provenance
// from it.
type BuildInfo struct {
	Tool          string   `json:"tool"` // "edgectl pulsar2 build"
	PulsarVersion string   `json:"pulsar2_version"`
	Image         string   `json:"image"`
	Pulsar2Bin    string   `json:"pulsar2_bin,omitempty"` // the native compiler (--pulsar2-bin), instead of an image
	Builder       string   `json:"builder"`
	Chip          string   `json:"chip"`
	KVCacheLen    int      `json:"kv_cache_len"`
	PrefillLen    int      `json:"prefill_len"`
	PrefillGroups []int    `json:"prefill_groups,omitempty"`
	WeightType    string   `json:"weight_type"`
	Shim          []string `json:"shim,omitempty"`
	Source        string   `json:"source"`
}

// readBuildInfo reads DIR/edgectl_build.json.
func readBuildInfo(dir string) (*BuildInfo, error) {
	path := filepath.Join(dir, BuildInfoName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var bi BuildInfo
	if err := json.Unmarshal(b, &bi); err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &bi, nil
}
