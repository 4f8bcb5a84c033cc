package main

import (
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Every numeric flag of every command is checked once, where it is parsed:
// checkNumericFlags wraps each flag's value so that Set refuses NaN, ±Inf
// and anything outside the flag's range, and the range is appended to the
// flag's help. A refused value is a flag error, so it exits 2 with one
// line (root's FlagErrorFunc). The rule is looked up by flag name in
// numericRanges; a numeric flag not listed there gets defaultRange for its
// type, so a new flag is never unchecked.

// numRange is the values a numeric flag accepts: lo…hi, lo itself
// excluded when loOpen. Durations are in seconds.
type numRange struct {
	lo, hi float64
	loOpen bool
	hiFn   func() float64 // a bound that depends on the machine (CPUs)
	zero   string         // what 0 means, when 0 is allowed and special
}

func (r numRange) max() float64 {
	if r.hiFn != nil {
		return r.hiFn()
	}
	return r.hi
}

// allows reports whether v is in range (NaN and ±Inf never are, except
// for "any value" ranges of integer flags, which cannot hold them).
func (r numRange) allows(v float64) bool {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return false
	}
	if v < r.lo || (r.loOpen && v == r.lo) {
		return false
	}
	return v <= r.max()
}

// String is the range as help and errors show it.
func (r numRange) String() string {
	if math.IsInf(r.lo, -1) && math.IsInf(r.max(), 1) {
		return "any integer"
	}
	open := "["
	if r.loOpen {
		open = "("
	}
	s := fmt.Sprintf("%s%s, %s]", open, fmtBound(r.lo), fmtBound(r.max()))
	if r.zero != "" {
		s += "; 0: " + r.zero
	}
	return s
}

func fmtBound(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// maxThreads is the --threads/--parallel ceiling: 4 workers per CPU is
// already far past any speed-up, and each worker holds buffers (ten
// million threads once took 1.5 GB before any work).
func maxThreads() float64 { return float64(runtime.NumCPU() * 4) }

const (
	maxTokens   = 1 << 26 // tokens of context or output: past every model's window (the engine bounds it by memory)
	maxKVLen    = 1 << 20 // NPU KV-cache and prefill lengths
	maxBudgetMB = 1 << 24 // 16 TiB in MiB
)

// numericRanges is the one table of numeric flag ranges, by flag name
// (the same name means the same thing in every command).
var numericRanges = map[string]numRange{
	"threads":        {lo: 0, hiFn: maxThreads, zero: "all cores"},
	"parallel":       {lo: 0, hiFn: maxThreads, zero: "min(8, CPUs)"},
	"jobs":           {lo: 1, hi: 64},
	"retries":        {lo: 0, hi: 100},
	"ctx":            {lo: 0, hi: maxTokens, zero: "the model's own, bounded by memory"},
	"max-tokens":     {lo: 0, hi: maxTokens, zero: "until EOS or the context is full"},
	"temperature":    {lo: 0, hi: 100, zero: "greedy"},
	"top-k":          {lo: 0, hi: 1 << 20, zero: "off"},
	"top-p":          {lo: 0, hi: 1, loOpen: true},
	"min-p":          {lo: 0, hi: 1, zero: "off"},
	"repeat-penalty": {lo: 0, hi: 100, loOpen: true},
	"seed":           {lo: math.Inf(-1), hi: math.Inf(1)},
	"runs":           {lo: 1, hi: 10000},
	"prompt-tokens":  {lo: 1, hi: maxTokens},
	"gen-tokens":     {lo: 2, hi: maxTokens},
	"kv-cache-len":   {lo: 0, hi: maxKVLen, zero: "the default"},
	"prefill-len":    {lo: 0, hi: maxKVLen, zero: "the default"},
	"max-prefill":    {lo: 0, hi: maxKVLen, zero: "the default"},
	"check-level":    {lo: 0, hi: 2},
	"card":           {lo: -1, hi: 255},
	"eos":            {lo: 0, hi: math.MaxInt32},
	"fill":           {lo: -65504, hi: 65504}, // what an f16 norm weight can hold
	"max-queue":      {lo: 0, hi: 1 << 20, zero: "the default, 64"},
	"watchdog":       {lo: 0, hi: 24 * 3600, zero: "the default, 2m"},
	"body-timeout":   {lo: 0, hi: 3600, loOpen: true},
	"npu-budget-mb":  {lo: 0, hi: maxBudgetMB},
	"cpu-budget-mb":  {lo: 0, hi: maxBudgetMB, zero: "up to 3 models"},
	"hot-temp":       {lo: 0, hi: 200, loOpen: true},
	"dimensions":     {lo: 0, hi: 1 << 20, zero: "all"},
	"sram-kb":        {lo: 1, hi: 1 << 20},
	"cores":          {lo: 1, hi: 64},
	"min-cosine":     {lo: -1, hi: 1},
	"timeout":        {lo: 0, hi: 7 * 24 * 3600, loOpen: true}, // one rknn build shard's compile
}

// defaultRange is the rule of a numeric flag numericRanges does not list.
func defaultRange(typ string) numRange {
	switch typ {
	case "float32", "float64":
		return numRange{lo: 0, hi: 1e9}
	case "duration":
		return numRange{lo: 0, hi: 365 * 24 * 3600}
	}
	return numRange{lo: 0, hi: math.MaxInt32}
}

// numericTypes are the pflag value types checkNumericFlags wraps.
var numericTypes = map[string]bool{
	"int": true, "int8": true, "int16": true, "int32": true, "int64": true,
	"uint": true, "uint8": true, "uint16": true, "uint32": true, "uint64": true,
	"float32": true, "float64": true, "duration": true,
}

// rangeOf is the rule for flag f.
func rangeOf(f *pflag.Flag) numRange {
	if r, ok := numericRanges[f.Name]; ok {
		return r
	}
	return defaultRange(f.Value.Type())
}

// checkNumericFlags wraps every numeric flag under c (local and
// persistent, every subcommand).
func checkNumericFlags(c *cobra.Command) {
	wrap := func(f *pflag.Flag) {
		if _, done := f.Value.(*rangedValue); done || !numericTypes[f.Value.Type()] {
			return
		}
		r := rangeOf(f)
		f.Value = &rangedValue{Value: f.Value, r: r}
		f.Usage += " (" + r.String() + ")"
	}
	c.Flags().VisitAll(wrap)
	c.PersistentFlags().VisitAll(wrap)
	for _, sub := range c.Commands() {
		checkNumericFlags(sub)
	}
}

// rangedValue is a numeric flag value that refuses what its range does
// not allow, leaving the previous value in place.
type rangedValue struct {
	pflag.Value
	r numRange
}

func (v *rangedValue) Set(s string) error {
	old := v.Value.String()
	if err := v.Value.Set(s); err != nil {
		return err
	}
	x, err := numberOf(v.Value)
	if err == nil && v.r.allows(x) {
		return nil
	}
	_ = v.Value.Set(old)
	switch {
	case err != nil:
		return fmt.Errorf("want a number in %s", v.r)
	case math.IsNaN(x):
		return fmt.Errorf("not a number; want %s", v.r)
	case math.IsInf(x, 0):
		return fmt.Errorf("infinite; want %s", v.r)
	}
	return fmt.Errorf("out of range; want %s", v.r)
}

// numberOf reads a numeric flag value back as a float64 (a duration in
// seconds).
func numberOf(v pflag.Value) (float64, error) {
	s := v.String()
	if v.Type() == "duration" {
		d, err := time.ParseDuration(s)
		return d.Seconds(), err
	}
	return strconv.ParseFloat(strings.TrimSpace(s), 64)
}
