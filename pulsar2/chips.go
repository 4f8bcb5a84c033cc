package pulsar2

import "strings"

// The one table of chip names edgectl accepts, for every command that
// takes --chip or --target (pulsar2 build, prep, doctor). Each name maps
// to the value pulsar2 llm_build's --chip takes: AX620E, AX650 or LAMBERT
// (docs/axera.md §2). AX8850 and the boards and cards built on it run
// AX650 models ("ax650 models support axcl and 8850, it is same npu",
// AXERA-TECH/ax-llm#27); an AX-M1 card reports itself as AX650N in
// axcl-smi (axera.md §2, §12).
var chipTable = []struct {
	name string // as people write it; matched case-insensitively, ignoring - _ and spaces
	chip string // pulsar2 --chip
	what string // what the name is, for the note when it is not the chip itself
}{
	{"AX650", "AX650", ""},
	{"AX650N", "AX650", ""},
	{"AX650A", "AX650", ""},
	{"AX8850", "AX650", "AX8850 runs AX650 models"},
	{"AX-M1", "AX650", "the Radxa AX-M1 card is an AX8850, which runs AX650 models"},
	{"LLM-8850", "AX650", "the M5Stack LLM-8850 card is an AX8850, which runs AX650 models"},
	{"AX620E", "AX620E", ""},
	{"LAMBERT", "LAMBERT", ""},
}

// ChipNames says which names the table accepts, for help texts and errors.
const ChipNames = "AX650 (also AX650N, AX650A, AX8850, AX-M1, LLM-8850; any case), AX620E or LAMBERT"

// Chip is a name resolved through the chip table.
type Chip struct {
	Name     string // the table's spelling of what the user wrote
	Compiler string // pulsar2 --chip value
	Note     string // why Compiler differs from Name; "" when it does not
}

// ParseChip resolves a --chip or --target name; "" is DefaultChip. ok is
// false for a name the table lacks.
func ParseChip(s string) (c Chip, ok bool) {
	if strings.TrimSpace(s) == "" {
		s = DefaultChip
	}
	key := chipKey(s)
	for _, e := range chipTable {
		if chipKey(e.name) == key {
			c = Chip{Name: e.name, Compiler: e.chip}
			if e.what != "" {
				c.Note = e.what + ": building with --chip " + e.chip
			}
			return c, true
		}
	}
	return Chip{}, false
}

// IsAX650 reports whether s names the AX650 NPU (any of its spellings,
// boards and cards): what doctor and prep's ax650 target check for.
func IsAX650(s string) bool {
	c, ok := ParseChip(s)
	return ok && c.Compiler == "AX650"
}

func chipKey(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '-', '_', ' ', '\t':
			return -1
		}
		return r
	}, strings.ToUpper(strings.TrimSpace(s)))
}
