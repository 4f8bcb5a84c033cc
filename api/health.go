package api

import "time"

// Health is GET /health, for load balancers (any 200 means up) and
// dashboards. Status is "ok", or "hot" while the NPU or host temperature
// is above the server's hot limit (--hot-temp); it stays 200 either way.
type Health struct {
	Status       string        `json:"status"`
	Version      string        `json:"version"`
	ModelsLoaded int           `json:"models_loaded"` // len(Models); kept from the first /health
	UptimeS      float64       `json:"uptime_s"`
	Lanes        []HealthLane  `json:"lanes"`
	Models       []HealthModel `json:"models"`
	Temperature  HealthTemp    `json:"temperature"`
	Memory       HealthMemory  `json:"memory"`
}

// HealthLane is one lane: the pure-Go CPU engine, the Axera vendor
// runtime, or an OpenAI-compatible upstream.
type HealthLane struct {
	Name     string  `json:"name"`    // cpu, axcl, upstream:NAME or a configured lane name
	Backend  string  `json:"backend"` // cpu, axcl or upstream
	Loaded   int     `json:"loaded"`
	Busy     int     `json:"busy"`      // requests running
	MemoryMB float64 `json:"memory_mb"` // held by its models (and ones still unloading)
	BudgetMB int64   `json:"budget_mb,omitempty"`
}

// HealthModel is a model in memory.
type HealthModel struct {
	Name  string    `json:"name"`
	Lane  string    `json:"lane"`
	Since time.Time `json:"since"`
	Busy  bool      `json:"busy"`
}

// HealthTemp holds the latest readings in °C (null where the platform has
// no sensor) and the limit above which Status is "hot".
type HealthTemp struct {
	NPUC      *float64  `json:"npu_c"`
	HostC     *float64  `json:"host_c"`
	HotC      float64   `json:"hot_c"`
	SampledAt time.Time `json:"sampled_at"`
}

// HealthMemory is host RAM and the NPU's CMM pool in MiB (CMM from
// axcl-smi; null without it).
type HealthMemory struct {
	RAMUsedMB     *float64 `json:"ram_used_mb"`
	RAMTotalMB    *float64 `json:"ram_total_mb"`
	NPUCMMUsedMB  *float64 `json:"npu_cmm_used_mb"`
	NPUCMMTotalMB *float64 `json:"npu_cmm_total_mb"`
}
