package serve

import "github.com/edgectl/edgectl/engine/toolcall"

// completionText is the text of a text completion's events: what the
// model wrote, with thinking an HTTP upstream split off itself put back
// in it, `<think>\n…\n</think>\n\n` before the answer (toolStream's
// inlineReasoning, serve/tools.go), as the cpu lane's raw-prompt answer
// carries it. /v1/completions has no field of its own for thinking.
func completionText(evs []toolcall.Event) string {
	var a chatAnswer
	a.add(evs)
	return a.text.String()
}
