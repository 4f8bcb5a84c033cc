package axllm

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Layout is what pulsar2 wrote: one <prefix>_p<prefill>_l<i>_together.axmodel
// per layer and a <prefix>_post.axmodel.
type Layout struct {
	Prefix   string `json:"prefix"`
	Prefill  int    `json:"prefill"`
	Layers   int    `json:"layers"`
	Template string `json:"template"` // with %d
	Post     string `json:"post"`
}

var layerFile = regexp.MustCompile(`^(.+)_p(\d+)_l(\d+)_together\.axmodel$`)

// DiscoverLayout finds the compiled files in dir (axera.md §5: glob
// *_p*_l0_together.axmodel and *_post.axmodel) and checks the layer files
// run 0..n-1 without gaps.
func DiscoverLayout(dir string) (*Layout, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	type series struct {
		prefill int
		idx     map[int]bool
	}
	found := map[string]*series{} // key prefix_pN
	for _, e := range ents {
		m := layerFile.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		key := m[1] + "_p" + m[2]
		s := found[key]
		if s == nil {
			p, _ := strconv.Atoi(m[2])
			s = &series{prefill: p, idx: map[int]bool{}}
			found[key] = s
		}
		i, _ := strconv.Atoi(m[3])
		s.idx[i] = true
	}
	if len(found) == 0 {
		return nil, fmt.Errorf("%s: no %s layer files", dir, FirstLayerGlob)
	}
	if len(found) > 1 {
		var keys []string
		for k := range found {
			keys = append(keys, k+"_l%d")
		}
		sort.Strings(keys)
		return nil, fmt.Errorf("%s: layer files of more than one build (%s); keep one", dir, strings.Join(keys, ", "))
	}
	var l Layout
	for key, s := range found {
		l.Prefix = strings.TrimSuffix(key, "_p"+strconv.Itoa(s.prefill))
		l.Prefill = s.prefill
		for i := 0; s.idx[i]; i++ {
			l.Layers = i + 1
		}
		if l.Layers != len(s.idx) {
			return nil, fmt.Errorf("%s: layer files %s_l*_together.axmodel have a gap after layer %d (%d files)", dir, key, l.Layers-1, len(s.idx))
		}
		l.Template = key + "_l%d_together.axmodel"
	}
	l.Post = l.Prefix + "_post.axmodel"
	if _, err := os.Stat(filepath.Join(dir, l.Post)); err != nil {
		posts, _ := filepath.Glob(filepath.Join(dir, PostModelGlob))
		if len(posts) != 1 {
			return nil, fmt.Errorf("%s: no post model %s", dir, l.Post)
		}
		l.Post = filepath.Base(posts[0])
	}
	return &l, nil
}
