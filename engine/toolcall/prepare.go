package toolcall

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/edgectl/edgectl/engine"
)

// Prepare fits a conversation, and the tools t offers, to the format's
// template, beyond PrepareMessages' call ids:
//   - DeepSeek V3.1's and functionary's templates join a call's arguments
//     to text with '+': they get the arguments' JSON text, not an object;
//   - DeepSeek R1's template writes calls only for a turn whose content is
//     None (which a Go string cannot be), and Granite 3.3's writes no calls
//     at all: the calls become the turn's text, in the family's own form;
//   - DeepSeek's templates show no tools: the tools and the call format go
//     at the end of the system prompt, as DeepSeek's model cards ask.
//
// msgs is not modified.
func Prepare(f Format, t *engine.Tools, msgs []engine.Message) []engine.Message {
	out := PrepareMessages(f, msgs)
	switch f {
	case DeepSeekR1, DeepSeekV31, FunctionaryV31, FunctionaryV32, Granite:
	default:
		return out
	}
	out = slices.Clone(out)
	for i, m := range out {
		if len(m.ToolCalls) == 0 {
			continue
		}
		switch f {
		case DeepSeekR1, Granite:
			m.Content += callsText(f, m.ToolCalls)
			m.ToolCalls = nil
		default:
			m.ToolCalls = slices.Clone(m.ToolCalls)
			for j, c := range m.ToolCalls {
				text, _ := json.Marshal(c.Function.ArgumentsText())
				m.ToolCalls[j].Function.Arguments = text
			}
		}
		out[i] = m
	}
	if (f == DeepSeekR1 || f == DeepSeekV31) && t.Offered() {
		out = withSystem(out, deepseekToolPrompt(f, t.Defs))
	}
	return out
}

// callsText is calls as the family's model writes them.
func callsText(f Format, calls []engine.ToolCall) string {
	var b strings.Builder
	switch f {
	case Granite:
		type call struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		list := make([]call, len(calls))
		for i, c := range calls {
			list[i] = call{c.Function.Name, json.RawMessage(c.Function.ArgumentsText())}
		}
		js, err := json.Marshal(list)
		if err != nil { // arguments that are no JSON: as a string
			for i := range list {
				list[i].Arguments, _ = json.Marshal(string(list[i].Arguments))
			}
			js, _ = json.Marshal(list)
		}
		b.WriteString(graniteMarker)
		b.Write(js)
	case DeepSeekR1:
		b.WriteString(dsCallsBegin)
		for i, c := range calls {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%sfunction%s%s\n```json\n%s\n```%s", dsCallBegin, dsSep, c.Function.Name, c.Function.ArgumentsText(), dsCallEnd)
		}
		b.WriteString(dsCallsEnd)
	}
	return b.String()
}

// withSystem is msgs with text appended to the system prompt (a system
// turn added first when there is none).
func withSystem(msgs []engine.Message, text string) []engine.Message {
	if len(msgs) > 0 && msgs[0].Role == "system" {
		msgs[0].Content = strings.TrimRight(msgs[0].Content, "\n") + "\n\n" + text
		return msgs
	}
	return append([]engine.Message{{Role: "system", Content: text}}, msgs...)
}

// deepseekToolPrompt lists the tools and the family's call form, in the
// shape of the tool prompt DeepSeek's V3.1 model card documents.
func deepseekToolPrompt(f Format, defs json.RawMessage) string {
	var list []struct {
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	json.Unmarshal(defs, &list) // checked by ParseTools before
	var b strings.Builder
	b.WriteString("## Tools\nYou have access to the following tools:\n")
	for _, t := range list {
		params := t.Function.Parameters
		if len(params) == 0 {
			params = json.RawMessage("{}")
		}
		fmt.Fprintf(&b, "\n### %s\nDescription: %s\n\nParameters: %s\n", t.Function.Name, t.Function.Description, params)
	}
	b.WriteString("\nIMPORTANT: ALWAYS adhere to this exact format for tool use:\n")
	if f == DeepSeekR1 {
		b.WriteString(dsCallsBegin + dsCallBegin + "function" + dsSep + "tool_call_name\n```json\ntool_call_arguments\n```" + dsCallEnd + "{additional_tool_calls}" + dsCallsEnd)
	} else {
		b.WriteString(dsCallsBegin + dsCallBegin + "tool_call_name" + dsSep + "tool_call_arguments" + dsCallEnd + "{additional_tool_calls}" + dsCallsEnd)
	}
	b.WriteString("\n\nWhere tool_call_name is exactly one of the tools above and tool_call_arguments is a JSON object following its Parameters schema.")
	return b.String()
}
