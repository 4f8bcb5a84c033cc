package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// DefaultMaxBody is serve's default request body limit. The server reads
// the body (within its limit and read timeout) before a handler decodes it.
const DefaultMaxBody = 8 << 20

// Decode reads one JSON object from r into v. Its errors are written for
// the client: what is wrong and where (field path or byte offset); errors
// about one field are *FieldError.
func Decode(r io.Reader, v any) error {
	dec := json.NewDecoder(r)
	if err := dec.Decode(v); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return errors.New("empty request body: send a JSON object")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return errors.New("request body ends in the middle of the JSON object")
		case errors.As(err, &se):
			return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, se)
		case errors.As(err, &te):
			if te.Field == "" {
				return fmt.Errorf("request body must be a JSON object, not %s", te.Value)
			}
			// encoding/json spells fields of embedded structs with the
			// struct's Go name ("GenerationParams.temperature"); clients
			// know only the JSON key.
			field := strings.TrimPrefix(te.Field, "GenerationParams.")
			kind := te.Type.Kind().String()
			if lit, ok := strings.CutPrefix(te.Value, "number "); ok {
				return numberError(field, lit, kind)
			}
			return &FieldError{Field: field, Msg: fmt.Sprintf("field %q must be %s, not %s", field, jsonKind(kind), te.Value)}
		}
		return fmt.Errorf("invalid request: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("unexpected data after the JSON object at byte %d: send one object", dec.InputOffset())
	}
	return nil
}

// numberError explains a JSON number its Go field cannot hold: too large
// (9223372036854775808, 1e999) or not an integer where one belongs.
func numberError(field, lit, goKind string) error {
	r := rangeOf(field, goKind)
	msg := fmt.Sprintf("field %q = %s is out of range: want %s", field, lit, r)
	if f, err := strconv.ParseFloat(lit, 64); err == nil && r.Integer && strings.ContainsAny(lit, ".eE") {
		switch {
		case f != math.Trunc(f):
			msg = fmt.Sprintf("field %q = %s is not an integer: want %s", field, lit, r)
		case f >= r.Min && f <= r.Max:
			msg = fmt.Sprintf("field %q = %s: write integers without a fraction or exponent (want %s)", field, lit, r)
		}
	}
	return &FieldError{Field: field, Msg: msg}
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "ptr":
		return "a value of another type"
	}
	return "a number"
}
