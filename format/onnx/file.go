package onnx

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/edgectl/edgectl/format/internal/modelfile"
	"github.com/edgectl/edgectl/internal/atomicfile"
	"github.com/edgectl/edgectl/internal/mmapfile"
)

// File is a model opened from disk: the model file and any external data
// files are mapped read-only, and the Model's tensor data points into the
// mappings. Close releases them (the Model's data is invalid after).
type File struct {
	*Model
	Path  string
	files []*mmapfile.File
}

// Open reads an ONNX model through a read-only mapping and maps the
// external data its initializers name (paths relative to the model's
// directory; names leaving it are refused).
func Open(path string) (*File, error) {
	mf, err := mmapfile.Open(path, "an .onnx model")
	if err != nil {
		return nil, err
	}
	f := &File{Path: path, files: []*mmapfile.File{mf}}
	b, err := mf.Slice(0, mf.Size())
	if err != nil {
		f.Close()
		return nil, err
	}
	if f.Model, err = Decode(b); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if f.Graph == nil {
		f.Close()
		return nil, fmt.Errorf("%s: the ModelProto has no graph (field 7): not an ONNX model; re-export it", path)
	}
	if err := f.loadExternal(); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func (f *File) loadExternal() error {
	dir := filepath.Dir(f.Path)
	open := map[string]*mmapfile.File{}
	for _, t := range f.Graph.Initializer {
		loc, off, n, ok := t.ExternalRef()
		if !ok {
			continue
		}
		p, err := modelfile.Join(dir, loc)
		if err != nil {
			return fmt.Errorf("%s: tensor %q: external data location %v (edgectl reads external data only beside the model)", f.Path, t.Name, err)
		}
		df := open[p]
		if df == nil {
			if df, err = mmapfile.Open(p, "an external data file"); err != nil {
				return fmt.Errorf("%s: tensor %q: %w", f.Path, t.Name, err)
			}
			open[p] = df
			f.files = append(f.files, df)
		}
		if n < 0 {
			n = df.Size() - off
		}
		if off < 0 || n < 0 || off > df.Size() || n > df.Size()-off {
			return fmt.Errorf("%s: tensor %q: external data [%d, +%d) lies outside %s (%d bytes): the data file does not belong to this model", f.Path, t.Name, off, n, p, df.Size())
		}
		if t.ext, err = df.Slice(off, n); err != nil {
			return err
		}
	}
	return nil
}

// Close unmaps the model and its data files.
func (f *File) Close() error {
	var first error
	for _, mf := range f.files {
		if err := mf.Close(); err != nil && first == nil {
			first = err
		}
	}
	f.files = nil
	return first
}

// WriteOptions say where tensor data goes.
type WriteOptions struct {
	// ExternalData, when set, is a file name beside the model: every
	// initializer of at least ExternalMin bytes (default 1024) is written
	// there (location/offset/length), as models over 2 GB must be.
	ExternalData string
	ExternalMin  int
}

// externalAlign keeps each tensor in the data file at an aligned offset
// (runtimes that mmap the file can use it in place).
const externalAlign = 64

// WriteFile writes m to path atomically (and its external data file first,
// also atomically): a failed write leaves neither file half written. Without
// ExternalData, tensors m holds as external data are written inline. m is
// not modified.
func WriteFile(path string, m *Model, o WriteOptions) error {
	if m.Graph == nil {
		return fmt.Errorf("onnx: writing %s: the model has no graph", path)
	}
	out := *m
	g := *m.Graph
	out.Graph = &g
	g.Initializer = make([]*Tensor, len(m.Graph.Initializer))
	var data *atomicfile.File
	var off int64
	if o.ExternalData != "" {
		if !filepath.IsLocal(o.ExternalData) || filepath.Base(o.ExternalData) != o.ExternalData {
			return fmt.Errorf("onnx: external data name %q must be a plain file name (it is written beside %s)", o.ExternalData, path)
		}
		var err error
		if data, err = atomicfile.Create(filepath.Join(filepath.Dir(path), o.ExternalData), 0o644); err != nil {
			return err
		}
		defer data.Abort()
	}
	minSize := o.ExternalMin
	if minSize == 0 {
		minSize = 1024
	}
	for i, t := range m.Graph.Initializer {
		raw, ok := t.Bytes()
		if !ok && t.DataLocation == LocationExternal {
			return fmt.Errorf("onnx: writing %s: tensor %q has external data that was not loaded (open the model with onnx.Open)", path, t.Name)
		}
		c := *t
		switch {
		case ok && data != nil && len(raw) >= minSize:
			if pad := (externalAlign - off%externalAlign) % externalAlign; pad > 0 {
				if _, err := data.Write(make([]byte, pad)); err != nil {
					return err
				}
				off += pad
			}
			if _, err := data.Write(raw); err != nil {
				return fmt.Errorf("onnx: writing %s: %w", data.Name(), err)
			}
			c.RawData, c.Typed, c.TypedField, c.DataLocation = nil, nil, 0, LocationExternal
			c.External = []KeyValue{{Key: "location", Value: o.ExternalData}, {Key: "offset", Value: strconv.FormatInt(off, 10)},
				{Key: "length", Value: strconv.Itoa(len(raw))}}
			c.fields = fields{unknown: t.unknown} // the old presence bits named the old fields
			c.ext = nil
			off += int64(len(raw))
		case t.DataLocation == LocationExternal:
			c.RawData, c.External, c.DataLocation, c.ext = raw, nil, LocationDefault, nil
			c.fields = fields{unknown: t.unknown}
		}
		g.Initializer[i] = &c
	}
	enc, err := Encode(&out)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	mf, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer mf.Abort()
	if _, err := enc.WriteTo(mf); err != nil {
		return fmt.Errorf("onnx: writing %s: %w", path, err)
	}
	if data != nil {
		if err := data.Commit(); err != nil {
			return err
		}
	}
	return mf.Commit()
}
