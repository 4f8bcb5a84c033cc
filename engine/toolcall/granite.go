package toolcall

// IBM Granite 3.x writes its calls as `<|tool_call|>` and a JSON list of
// {"name", "arguments"} objects, as its system prompt asks ("respond only
// with <|tool_call|> followed by a JSON list of tools used": the
// granite-3.3 chat template; granite-3.0's renders a call turn the same
// way). <|tool_call|> is one special token.
const graniteMarker = "<|tool_call|>"

var graniteFamily = &family{
	markers: []string{graniteMarker},
	nameKey: "name",
	array:   true,
}
