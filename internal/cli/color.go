package cli

// Colors for people on a terminal; plain text everywhere else.
const (
	Red    = "31"
	Green  = "32"
	Yellow = "33"
	Blue   = "34"
	Bold   = "1"
)

// ColorOut wraps s in an ANSI colour for writing on stdout, when stdout is
// a terminal (and NO_COLOR is unset, TERM is not dumb, not --json).
func (o *IO) ColorOut(code, s string) string { return paint(o.colorOut, code, s) }

// ColorErr wraps s in an ANSI colour for writing on stderr, when stderr is
// a terminal (and NO_COLOR is unset, TERM is not dumb, not --quiet).
func (o *IO) ColorErr(code, s string) string { return paint(o.colorErr, code, s) }

func paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
