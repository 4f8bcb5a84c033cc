package api

import (
	"fmt"
	"math"
	"strconv"
)

// Range is the values a numeric request field accepts.
type Range struct {
	Min, Max float64
	Integer  bool
}

// maxCount bounds token and thread counts: beyond it a value is a mistake,
// not a request.
const maxCount = math.MaxInt32

// Ranges are the accepted values of the numeric request fields, keyed by
// the JSON path Decode reports ("options.num_ctx"). Decode uses them to
// answer a number its Go type cannot hold, and serve checks decoded values
// against them, so a client reads the same range either way.
var Ranges = map[string]Range{
	"max_tokens":            {0, maxCount, true},
	"max_completion_tokens": {0, maxCount, true},
	"max_output_tokens":     {1, maxCount, true}, // /v1/responses (OpenAI's minimum is 16; 1 is what a model can do)
	"temperature":           {0, 2, false},
	"top_p":                 {0, 1, false},
	"min_p":                 {0, 1, false},
	"top_k":                 {0, maxCount, true},
	"repeat_penalty":        {0, math.Inf(1), false},
	"seed":                  {math.MinInt64, math.MaxInt64, true},
	"n":                     {1, maxCount, true},
	"best_of":               {1, maxCount, true},
	"top_logprobs":          {0, 20, true},
	"logprobs":              {0, 20, true}, // /v1/completions: a count
	"frequency_penalty":     {-2, 2, false},
	"presence_penalty":      {-2, 2, false},

	"options.temperature":       {0, math.Inf(1), false},
	"options.top_p":             {0, 1, false},
	"options.min_p":             {0, 1, false},
	"options.typical_p":         {0, 1, false},
	"options.top_k":             {0, maxCount, true},
	"options.repeat_penalty":    {0, math.Inf(1), false},
	"options.repeat_last_n":     {-1, maxCount, true}, // -1: the whole context, 0: no penalty
	"options.seed":              {math.MinInt64, math.MaxInt64, true},
	"options.num_predict":       {-2, maxCount, true}, // -1: no limit, -2: fill the context
	"options.num_ctx":           {0, maxCount, true},
	"options.num_thread":        {0, maxCount, true},
	"options.mirostat":          {0, 2, true},
	"options.frequency_penalty": {-2, 2, false},
	"options.presence_penalty":  {-2, 2, false},
}

func (r Range) String() string {
	kind := "a number"
	if r.Integer {
		kind = "an integer"
	}
	switch {
	case math.IsInf(r.Max, 1) && math.IsInf(r.Min, -1):
		return "a finite number"
	case math.IsInf(r.Max, 1):
		return fmt.Sprintf("%s ≥ %s", kind, num(r.Min))
	}
	return fmt.Sprintf("%s from %s to %s", kind, num(r.Min), num(r.Max))
}

func num(f float64) string {
	switch f {
	case math.MinInt64:
		return "-9223372036854775808"
	case math.MaxInt64:
		return "9223372036854775807"
	}
	return strconv.FormatFloat(f, 'f', -1, 64)
}

// rangeOf is field's range, or what a Go kind holds for fields without one.
func rangeOf(field, goKind string) Range {
	if r, ok := Ranges[field]; ok {
		return r
	}
	switch goKind {
	case "int", "int64":
		return Range{math.MinInt64, math.MaxInt64, true}
	case "int32":
		return Range{math.MinInt32, math.MaxInt32, true}
	}
	return Range{math.Inf(-1), math.Inf(1), false}
}

// CheckInt refuses an integer field outside its range (nil: not sent).
func CheckInt[T int | int64](field string, v *T) error {
	if v == nil {
		return nil
	}
	r := rangeOf(field, "int64")
	if float64(*v) < r.Min || float64(*v) > r.Max {
		return &FieldError{Field: field, Msg: fmt.Sprintf("field %q = %d is out of range: want %s", field, *v, r)}
	}
	return nil
}

// CheckFloat refuses a number field outside its range (nil: not sent).
func CheckFloat(field string, v *float64) error {
	if v == nil {
		return nil
	}
	r := rangeOf(field, "float64")
	if math.IsNaN(*v) || *v < r.Min || *v > r.Max {
		return &FieldError{Field: field, Msg: fmt.Sprintf("field %q = %g is out of range: want %s", field, *v, r)}
	}
	return nil
}

// FieldError is a 400 about one request field; OpenAI errors carry the
// field as "param".
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Msg }
