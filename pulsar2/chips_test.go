package pulsar2

import "testing"

func TestChipTable(t *testing.T) {
	for in, want := range map[string]string{
		"": "AX650", "AX650": "AX650", "ax650": "AX650", "AX650N": "AX650", "ax650n": "AX650", "AX650A": "AX650",
		"AX8850": "AX650", "ax8850": "AX650", "AX-M1": "AX650", "ax-m1": "AX650", "AXM1": "AX650", "ax_m1": "AX650",
		"LLM-8850": "AX650", "llm8850": "AX650", " AX650 ": "AX650",
		"AX620E": "AX620E", "ax620e": "AX620E", "LAMBERT": "LAMBERT", "lambert": "LAMBERT",
	} {
		c, ok := ParseChip(in)
		if !ok || c.Compiler != want {
			t.Errorf("ParseChip(%q) = %+v, %v; want %s", in, c, ok, want)
		}
		if IsAX650(in) != (want == "AX650") {
			t.Errorf("IsAX650(%q) = %v", in, IsAX650(in))
		}
	}
	if c, _ := ParseChip("ax-m1"); c.Name != "AX-M1" || c.Note == "" {
		t.Errorf("AX-M1 without a note saying it builds for AX650: %+v", c)
	}
	for _, bad := range []string{"AX9999", "AX8860", "M1", "AX650X", "-"} {
		if c, ok := ParseChip(bad); ok {
			t.Errorf("ParseChip(%q) accepted: %+v", bad, c)
		}
	}
}
