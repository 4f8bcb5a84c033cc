package cli

// Colors for people on a terminal; plain text everywhere else.
const (
	Red    = "31"
	Green  = "32"
	Yellow = "33"
	Blue   = "34"
	Bold   = "1"
)

// Color wraps s in an ANSI colour when the session is interactive
// (a terminal, not CI, NO_COLOR unset, not --json or --quiet).
func (o *IO) Color(code, s string) string {
	if !o.Interactive {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}
