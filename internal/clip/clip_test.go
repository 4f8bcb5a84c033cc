package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShortValuesAreShownWhole(t *testing.T) {
	if got := Text("org/name"); got != "org/name" {
		t.Fatal(got)
	}
	if got := Quote("org/name"); got != `"org/name"` {
		t.Fatal(got)
	}
}

func TestLongValuesAreCutWithTheirLength(t *testing.T) {
	long := strings.Repeat("a", 10240)
	for _, got := range []string{Text(long), Quote(long)} {
		if len(got) > 300 || !strings.HasSuffix(got, "(10240 bytes)") || !strings.Contains(got, "…") {
			t.Fatalf("%d bytes: %q", len(got), got)
		}
	}
	if got := Quote(long); !strings.HasPrefix(got, `"aaaa`) || !strings.Contains(got, `…" (10240 bytes)`) {
		t.Fatal(got)
	}
}

// Multi-byte characters are never split; lines and escapes never leak.
func TestOneLineValidUTF8(t *testing.T) {
	s := strings.Repeat("é\n\x1b[2J", 5000)
	for _, got := range []string{Text(s), Quote(s)} {
		if strings.ContainsAny(got, "\n\r\x1b") || !utf8.ValidString(got) || len(got) > 300 {
			t.Fatalf("%q", got)
		}
	}
	if got := Text("a\nb"); got != `a\nb` {
		t.Fatal(got)
	}
}

// A message with an unclipped 10 KB path and several lines becomes one
// short line that keeps its words and says how long the path was.
func TestMessageClipsLongWords(t *testing.T) {
	msg := "stat " + strings.Repeat("a", 10240) + ": file name too long\nsecond line"
	got := Message(msg)
	if len(got) > 300 || strings.Contains(got, "\n") || !strings.Contains(got, "(10241 bytes)") || !strings.HasSuffix(got, "file name too long second line") {
		t.Fatalf("%d bytes: %q", len(got), got)
	}
	if got := Message("short: fine"); got != "short: fine" {
		t.Fatal(got)
	}
	many := strings.Repeat(strings.Repeat("b", 150)+" ", 100)
	if got := Message(many); len(got) > MaxMessage {
		t.Fatalf("%d bytes", len(got))
	}
}
