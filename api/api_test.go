package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestKeepAliveForms(t *testing.T) {
	for in, want := range map[string]time.Duration{
		`300`: 300 * time.Second, `1.5`: 1500 * time.Millisecond, `"10m"`: 10 * time.Minute, `"0"`: 0, `0`: 0,
		`-1`: Forever, `"-1m"`: Forever, `"3600"`: time.Hour, `1e30`: Forever,
	} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.Duration != want {
			t.Errorf("%s: %v %v, want %v", in, d.Duration, err, want)
		}
	}
	for _, bad := range []string{`true`, `"soon"`, `{}`, `[1]`} {
		var d Duration
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestContentAndStringList(t *testing.T) {
	var m ChatMessage
	for in, want := range map[string]string{
		`{"role":"user","content":"hi"}`: "hi",
		`{"role":"user","content":null}`: "",
		`{"role":"user"}`:                "",
		`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}`: "ab",
	} {
		m = ChatMessage{}
		if err := json.Unmarshal([]byte(in), &m); err != nil || string(m.Content) != want {
			t.Errorf("%s: %q %v", in, m.Content, err)
		}
	}
	var l StringList
	for in, want := range map[string]string{`"x"`: "x", `["a","b"]`: "a|b", `null`: ""} {
		l = nil
		if err := json.Unmarshal([]byte(in), &l); err != nil || strings.Join(l, "|") != want {
			t.Errorf("%s: %v %v", in, l, err)
		}
	}
	if err := json.Unmarshal([]byte(`5`), &l); err == nil {
		t.Error("number accepted as stop")
	}
}

func TestDecodeErrorsNameTheField(t *testing.T) {
	var r ChatCompletionRequest
	err := Decode(strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"x"}],"stream":"yes"}`), &r)
	if err == nil || err.Error() != `field "stream" must be a boolean, not string` {
		t.Errorf("%v", err)
	}
	err = Decode(strings.NewReader(`{"model":"m"} {"model":"n"}`), &r)
	if err == nil || !strings.Contains(err.Error(), "after the JSON object") {
		t.Errorf("trailing data: %v", err)
	}
}

// Numbers Go cannot hold, or that are outside what a field means, are a
// 400 naming the field and its range, never "must be a number, not number".
func TestDecodeNumbersOutOfRange(t *testing.T) {
	for body, want := range map[string]string{
		`{"max_tokens":9223372036854775808}`:           `field "max_tokens" = 9223372036854775808 is out of range: want an integer from 0 to 2147483647`,
		`{"temperature":1e999}`:                        `field "temperature" = 1e999 is out of range: want a number from 0 to 2`,
		`{"max_tokens":1.5}`:                           `field "max_tokens" = 1.5 is not an integer: want an integer from 0 to 2147483647`,
		`{"max_tokens":1e2}`:                           `field "max_tokens" = 1e2: write integers without a fraction or exponent (want an integer from 0 to 2147483647)`,
		`{"seed":9223372036854775808}`:                 `field "seed" = 9223372036854775808 is out of range: want an integer from -9223372036854775808 to 9223372036854775807`,
		`{"max_completion_tokens":-1e30}`:              `field "max_completion_tokens" = -1e30 is out of range: want an integer from 0 to 2147483647`,
		`{"messages":[],"top_k":99999999999999999999}`: `field "top_k" = 99999999999999999999 is out of range: want an integer from 0 to 2147483647`,
	} {
		var r ChatCompletionRequest
		err := Decode(strings.NewReader(body), &r)
		var fe *FieldError
		if err == nil || err.Error() != want || !errors.As(err, &fe) {
			t.Errorf("%s:\n got %v\nwant %s", body, err, want)
		}
	}
	var g GenerateRequest
	err := Decode(strings.NewReader(`{"options":{"num_predict":1e30}}`), &g)
	if err == nil || err.Error() != `field "options.num_predict" = 1e30 is out of range: want an integer from -2 to 2147483647` {
		t.Errorf("ollama option: %v", err)
	}
	neg := -5
	if err := CheckInt("max_tokens", &neg); err == nil || err.Error() != `field "max_tokens" = -5 is out of range: want an integer from 0 to 2147483647` {
		t.Errorf("negative max_tokens: %v", err)
	}
	big := 2.5
	if err := CheckFloat("temperature", &big); err == nil || err.Error() != `field "temperature" = 2.5 is out of range: want a number from 0 to 2` {
		t.Errorf("temperature 2.5: %v", err)
	}
	if err := CheckFloat("options.temperature", &big); err != nil {
		t.Errorf("ollama temperature 2.5: %v", err)
	}
}

func TestHardwareFlattensLaneFields(t *testing.T) {
	temp := 50.0
	ram := 2310.0
	b, _ := json.Marshal(Hardware{TempC: &temp, RAMUsageMB: &ram, Extra: map[string]any{"npu_cmm_remain_mb": 3788}})
	// The seed's names, always present (null when unknown); ram_used_mb is
	// the old name, kept for a release; CMM figures only where known.
	want := `{"cpu_load_pct":null,"npu_cmm_remain_mb":3788,"npu_delta_t":null,"npu_temp_c":null,"ram_usage_mb":2310,"ram_used_mb":2310,"temp_c":50}`
	if string(b) != want {
		t.Errorf("%s\nwant %s", b, want)
	}
	var h Hardware
	if err := json.Unmarshal(b, &h); err != nil || *h.TempC != 50 || *h.RAMUsageMB != 2310 || h.Extra["npu_cmm_remain_mb"] != 3788.0 || len(h.Extra) != 1 {
		t.Errorf("%+v %v", h, err)
	}
	// An answer from an older server that only wrote ram_used_mb.
	if err := json.Unmarshal([]byte(`{"ram_used_mb":100,"npu_cmm_used_mb":18,"npu_cmm_total_mb":7040}`), &h); err != nil ||
		h.RAMUsageMB == nil || *h.RAMUsageMB != 100 || *h.NPUCMMUsedMB != 18 || *h.NPUCMMTotalMB != 7040 {
		t.Errorf("old answer: %+v %v", h, err)
	}
}
