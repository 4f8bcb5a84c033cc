package jinja

import "time"

// Limits bounds what parsing and rendering one template may spend. The zero
// value of a field means its default (DefaultLimits).
type Limits struct {
	// Timeout bounds a render whose context has no deadline.
	Timeout time.Duration
	// MaxSteps bounds the statements, loop iterations and calls a render
	// executes (large string scans count in proportion to their size).
	MaxSteps int64
	// MaxOutputBytes caps the rendered text.
	MaxOutputBytes int
	// MaxStringBytes caps any one string a template builds (concatenation,
	// repetition, join, a captured block, tojson…), checked before allocating.
	MaxStringBytes int
	// MaxListLen caps any one list a template builds, and range().
	MaxListLen int
	// MaxAllocBytes caps the bytes of strings and lists built in one render,
	// all together (garbage included): memory stays bounded whatever the
	// template keeps alive.
	MaxAllocBytes int64
	// MaxCallDepth caps nested macro calls (recursion).
	MaxCallDepth int
	// MaxNesting caps how deep blocks and expressions nest in the source;
	// deeper input is a parse error, never a stack overflow.
	MaxNesting int
	// MaxSourceBytes caps the template text.
	MaxSourceBytes int
}

// DefaultLimits are generous for every real chat template (the largest
// render a long conversation needs is far below them) and small enough that
// a hostile template fails within about a second and some tens of MiB.
func DefaultLimits() Limits {
	return Limits{
		Timeout:        2 * time.Second,
		MaxSteps:       10_000_000,
		MaxOutputBytes: 16 << 20,
		MaxStringBytes: 16 << 20,
		MaxListLen:     1 << 20,
		MaxAllocBytes:  64 << 20,
		MaxCallDepth:   100,
		MaxNesting:     100,
		MaxSourceBytes: 512 << 10,
	}
}

// withDefaults fills zero fields from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	if l.MaxStringBytes <= 0 {
		l.MaxStringBytes = d.MaxStringBytes
	}
	if l.MaxListLen <= 0 {
		l.MaxListLen = d.MaxListLen
	}
	if l.MaxAllocBytes <= 0 {
		l.MaxAllocBytes = d.MaxAllocBytes
	}
	if l.MaxCallDepth <= 0 {
		l.MaxCallDepth = d.MaxCallDepth
	}
	if l.MaxNesting <= 0 {
		l.MaxNesting = d.MaxNesting
	}
	if l.MaxSourceBytes <= 0 {
		l.MaxSourceBytes = d.MaxSourceBytes
	}
	return l
}
