package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxBody bounds a request body.
const MaxBody = 8 << 20

// Decode reads one JSON object from r into v. Its errors are written for
// the client: what is wrong and where (field path or byte offset).
func Decode(r io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(r, MaxBody+1))
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
			return fmt.Errorf("field %q must be %s, not %s", field, jsonKind(te.Type.Kind().String()), te.Value)
		}
		return fmt.Errorf("invalid request: %v", err)
	}
	if dec.InputOffset() > MaxBody {
		return fmt.Errorf("request body larger than %d MiB", MaxBody>>20)
	}
	return nil
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
