package toolcall

// Cohere's Command R and R+ write their calls as the tool-use template's
// last system turn asks, and as it renders a call in the history:
//
//	Action:
//	```json
//	[
//	    {
//	        "tool_name": "get_weather",
//	        "parameters": {"city": "Paris"}
//	    }
//	]```
//
// Command R7B (c4ai-command-r7b-12-2024) writes
// `<|START_ACTION|>[{"tool_call_id": "0", "tool_name": …, "parameters": {…}}, …]<|END_ACTION|>`
// after an optional `<|START_THINKING|>…<|END_THINKING|>` plan.
const (
	cohereAction = "Action:"
	r7bBegin     = "<|START_ACTION|>"
	r7bEnd       = "<|END_ACTION|>"
)

var commandRFamily = &family{
	markers: []string{cohereAction},
	fences:  []string{"```json"},
	closers: []string{"```"},
	nameKey: "tool_name",
	array:   true,
}

var commandR7BFamily = &family{
	markers: []string{r7bBegin},
	closers: []string{r7bEnd},
	nameKey: "tool_name",
	array:   true,
}
