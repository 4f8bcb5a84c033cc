package axllm

import (
	"os"
	"path/filepath"

	"github.com/edgectl/edgectl/format/hfconfig"
)

// DirInfo describes a compiled directory as far as it can be read: fields
// whose source is missing or broken stay zero, and the reason is in the
// matching *Err field. inspect prints it; doctor judges it.
type DirInfo struct {
	Dir           string      `json:"dir"`
	Config        *Config     `json:"axllm_config,omitempty"`
	ConfigErr     string      `json:"config_error,omitempty"`
	ConfigBytes   int64       `json:"config_bytes"`
	Layout        *Layout     `json:"layout,omitempty"` // the .axmodel files found
	LayoutErr     string      `json:"layout_error,omitempty"`
	EmbedBytes    int64       `json:"embedding_bytes,omitempty"`
	Post          *PostConfig `json:"post_config,omitempty"`
	PostErr       string      `json:"post_config_error,omitempty"`
	Build         *BuildInfo  `json:"build,omitempty"` // edgectl_build.json, when edgectl built it
	KVCacheLen    int         `json:"kv_cache_len,omitempty"`
	MaxPositions  int         `json:"max_position_embeddings,omitempty"` // the sidecar HF config's
	SidecarConfig string      `json:"sidecar_config,omitempty"`          // *tokenizer*/config.json, where axllm reads sliding_window
	Stubs         []string    `json:"empty_files,omitempty"`             // 0-byte files (Hub repos ship stubs)
}

// Describe reads everything it can of a compiled directory.
func Describe(dir string) *DirInfo {
	d := &DirInfo{Dir: dir}
	cfgPath := filepath.Join(dir, ConfigName)
	if n, err := fileSize(cfgPath); err == nil {
		d.ConfigBytes = n
	}
	if c, err := ReadConfig(cfgPath); err != nil {
		d.ConfigErr = err.Error()
	} else {
		d.Config = c
	}
	if l, err := DiscoverLayout(dir); err != nil {
		d.LayoutErr = err.Error()
	} else {
		d.Layout = l
	}
	embed := EmbedFileName
	if d.Config != nil && d.Config.FilenameTokensEmbed != "" {
		embed = d.Config.FilenameTokensEmbed
	}
	d.EmbedBytes, _ = fileSize(resolve(dir, embed))
	if p, err := ReadPostConfig(PostConfigFile(dir, d.Config)); err != nil {
		d.PostErr = err.Error()
	} else {
		d.Post = p
	}
	if bi, err := readBuildInfo(dir); err == nil {
		d.Build, d.KVCacheLen = bi, bi.KVCacheLen
	}
	if side := SidecarConfigs(dir); len(side) > 0 {
		d.SidecarConfig = side[0]
		if hc, err := hfconfig.Load(side[0]); err == nil {
			d.MaxPositions = hc.Text().MaxPositionEmbeddings
		}
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && fi.Size() == 0 {
			d.Stubs = append(d.Stubs, e.Name())
		}
	}
	return d
}
