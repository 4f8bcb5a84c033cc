// Package envconfig is the one place edgectl reads its environment. Every
// variable any package reads is defined here once, with the line that
// documents it and a typed accessor; docs/environment.md is checked
// against this list, and a test fails when code elsewhere calls
// os.Getenv, os.LookupEnv or os.Environ.
//
// The package imports only the standard library, so libraries (engine/cpu,
// hub, prep) and the command layer may all depend on it. Accessors read the
// environment at each call: tests change it with t.Setenv.
package envconfig

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Var is one environment variable edgectl reads.
type Var struct {
	Name    string
	Area    string // who reads it: serve, cpu engine, hub, prep, terminal, tests
	Default string // what an unset variable means, for the docs ("" when nothing)
	Doc     string // one line for docs/environment.md
}

var defined []Var

// All returns every variable edgectl reads, in definition order (grouped by
// area).
func All() []Var { return append([]Var(nil), defined...) }

func define(name, area, def, doc string) Var {
	for _, v := range defined {
		if v.Name == name {
			panic("envconfig: " + name + " defined twice")
		}
	}
	v := Var{Name: name, Area: area, Default: def, Doc: doc}
	defined = append(defined, v)
	return v
}

// Value is the variable's value with surrounding blanks removed ("" when
// unset).
func (v Var) Value() string { return strings.TrimSpace(os.Getenv(v.Name)) }

// IsSet says the variable holds something other than blanks: an empty
// variable counts as unset, as in Ollama and huggingface_hub.
func (v Var) IsSet() bool { return v.Value() != "" }

// String is a variable read as text.
type String struct{ Var }

// Get returns the value, or "" when unset.
func (s String) Get() string { return s.Value() }

// Bool is an on/off switch.
type Bool struct{ Var }

// Get is true for 1, t, true (any case); false when unset or anything else.
func (b Bool) Get() bool {
	on, err := strconv.ParseBool(b.Value())
	return err == nil && on
}

// List is a list of values with a separator.
type List struct {
	Var
	Sep string
}

// Get splits the value on the separator, dropping blank items (nil when
// unset).
func (l List) Get() []string {
	var out []string
	for _, item := range strings.Split(l.Value(), l.Sep) {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func newString(name, area, def, doc string) String { return String{define(name, area, def, doc)} }
func newBool(name, area, doc string) Bool          { return Bool{define(name, area, "off", doc)} }
func newList(name, area, sep, doc string) List     { return List{define(name, area, "", doc), sep} }

// Get returns the value of a variable defined in this package, for code
// that takes a getenv function (hub reads huggingface_hub's variables with
// that library's own rules). Asking for a variable that is not defined here
// panics: every variable edgectl reads must have its doc line.
func Get(name string) string {
	for _, v := range defined {
		if v.Name == name {
			return v.Value()
		}
	}
	panic(fmt.Sprintf("envconfig: %s is read but not defined in internal/envconfig", name))
}

// ChildEnv is the environment of a program edgectl starts (a vendor runtime,
// an upstream server, a compiler): edgectl's own environment, passed through
// unread, then extra ("NAME=value"; later entries win).
func ChildEnv(extra ...string) []string {
	return append(os.Environ(), extra...)
}
