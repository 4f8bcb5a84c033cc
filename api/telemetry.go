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

// Hardware is what the host, the NPU and the lane report, under the names
// the device seeds use (npu_temp_c, npu_delta_t, ram_usage_mb,
// cpu_load_pct). Values a platform cannot provide are null; the CMM
// figures are left out where there is no axcl-smi. Lane-specific numbers
// such as npu_cmm_remain_mb are flattened into the same object.
type Hardware struct {
	NPUTempC   *float64 // npu_temp_c: the card (axcl-smi), or the SoC's thermal zones on an AX650 board
	NPUDeltaT  *float64 // npu_delta_t: npu_temp_c at the end minus at the start of the request
	RAMUsageMB *float64 // ram_usage_mb: MemTotal − MemAvailable
	CPULoadPct *float64 // cpu_load_pct
	TempC      *float64 // temp_c: the host's hottest thermal zone

	NPUCMMUsedMB  *float64 // npu_cmm_used_mb (axcl-smi)
	NPUCMMTotalMB *float64 // npu_cmm_total_mb (axcl-smi)

	Extra map[string]any
}

// MarshalJSON flattens Extra next to the fixed fields. ram_used_mb, the
// name before the seed's ram_usage_mb, is written too until the release
// after 0.x removes it (docs/serve.md).
func (h Hardware) MarshalJSON() ([]byte, error) {
	m := map[string]any{
		"npu_temp_c": h.NPUTempC, "npu_delta_t": h.NPUDeltaT, "ram_usage_mb": h.RAMUsageMB,
		"cpu_load_pct": h.CPULoadPct, "temp_c": h.TempC,
		"ram_used_mb": h.RAMUsageMB, // deprecated alias of ram_usage_mb
	}
	if h.NPUCMMUsedMB != nil {
		m["npu_cmm_used_mb"] = h.NPUCMMUsedMB
	}
	if h.NPUCMMTotalMB != nil {
		m["npu_cmm_total_mb"] = h.NPUCMMTotalMB
	}
	maps.Copy(m, h.Extra)
	return json.Marshal(m)
}

// UnmarshalJSON is the inverse of MarshalJSON (clients and tests); it
// accepts answers from servers that only wrote ram_used_mb.
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
	h.NPUTempC, h.NPUDeltaT, h.CPULoadPct, h.TempC = num("npu_temp_c"), num("npu_delta_t"), num("cpu_load_pct"), num("temp_c")
	h.RAMUsageMB = num("ram_usage_mb")
	if old := num("ram_used_mb"); h.RAMUsageMB == nil {
		h.RAMUsageMB = old
	}
	h.NPUCMMUsedMB, h.NPUCMMTotalMB = num("npu_cmm_used_mb"), num("npu_cmm_total_mb")
	h.Extra = m
	return nil
}
