package api

import (
	"encoding/json"
	"maps"
)

// Metrics is the telemetry block every answer carries in usage.metrics
// (OpenAI) or metrics (Ollama).
type Metrics struct {
	TTFTMS     float64  `json:"ttft_ms"`
	TPS        float64  `json:"tps"`         // decode tokens per second
	PrefillTPS float64  `json:"prefill_tps"` // prompt tokens per second
	TotalTimeS float64  `json:"total_time_s"`
	QueueMS    float64  `json:"queue_ms"` // waiting for a slot or a load
	LoadMS     float64  `json:"load_ms"`  // loading the model for this request
	Lane       string   `json:"lane"`
	Hardware   Hardware `json:"hardware"`
}

// Hardware is what the host (and the lane, when it knows) reports. Values a
// platform cannot provide are null. Lane-specific numbers such as
// npu_cmm_remain_mb are flattened into the same object.
type Hardware struct {
	TempC      *float64
	RAMUsedMB  *float64
	CPULoadPct *float64
	Extra      map[string]any
}

// MarshalJSON flattens Extra next to the fixed fields.
func (h Hardware) MarshalJSON() ([]byte, error) {
	m := map[string]any{"temp_c": h.TempC, "ram_used_mb": h.RAMUsedMB, "cpu_load_pct": h.CPULoadPct}
	maps.Copy(m, h.Extra)
	return json.Marshal(m)
}

// UnmarshalJSON is the inverse of MarshalJSON (clients and tests).
func (h *Hardware) UnmarshalJSON(b []byte) error {
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	num := func(k string) *float64 {
		v, ok := m[k].(float64)
		delete(m, k)
		if !ok {
			return nil
		}
		return &v
	}
	h.TempC, h.RAMUsedMB, h.CPULoadPct = num("temp_c"), num("ram_used_mb"), num("cpu_load_pct")
	h.Extra = m
	return nil
}
