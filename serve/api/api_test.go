package api

import (
	"encoding/json"
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
	err = Decode(strings.NewReader(strings.Repeat(" ", MaxBody+10)+"{}"), &r)
	if err == nil {
		t.Error("oversized body accepted")
	}
}

func TestHardwareFlattensLaneFields(t *testing.T) {
	temp := 50.0
	b, _ := json.Marshal(Hardware{TempC: &temp, Extra: map[string]any{"npu_cmm_remain_mb": 3788}})
	if string(b) != `{"cpu_load_pct":null,"npu_cmm_remain_mb":3788,"ram_used_mb":null,"temp_c":50}` {
		t.Errorf("%s", b)
	}
	var h Hardware
	if err := json.Unmarshal(b, &h); err != nil || *h.TempC != 50 || h.Extra["npu_cmm_remain_mb"] != 3788.0 {
		t.Errorf("%+v %v", h, err)
	}
}
