package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/internal/testbin"
)

// fakeSys writes a /proc and /sys tree: one thermal zone at zoneC, 8 GB of
// RAM with 1000 MiB in use, and a CPU line.
func fakeSys(t *testing.T, zoneC float64) string {
	t.Helper()
	root := t.TempDir()
	for p, s := range map[string]string{
		"sys/class/thermal/thermal_zone0/temp": fmt.Sprintf("%d\n", int(zoneC*1000)),
		"proc/meminfo":                         "MemTotal:        8000000 kB\nMemAvailable:    6976000 kB\n",
		"proc/stat":                            "cpu  100 0 100 700 100 0 0 0 0 0\n",
	} {
		full := filepath.Join(root, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// fakeCard is an AX650N card behind the fake axcl-smi (engine/axcl/testdata):
// set changes its readings between two runs of axcl-smi.
type fakeCard struct {
	t    *testing.T
	file string
	eng  *axcl.Engine
}

func newFakeCard(t *testing.T, tempC, cmmUsed int) *fakeCard {
	bin := testbin.Build(t, "github.com/edgectl/edgectl/engine/axcl/testdata/fakesmi", "axcl-smi")
	c := &fakeCard{t: t, file: filepath.Join(t.TempDir(), "card.json")}
	c.set(tempC, cmmUsed)
	c.eng = axcl.New(axcl.Options{SMI: []string{bin, "--card", c.file}})
	return c
}

// set replaces the file in one rename, so axcl-smi never reads half of it.
func (c *fakeCard) set(tempC, cmmUsed int) {
	tmp := c.file + ".tmp"
	if err := os.WriteFile(tmp, fmt.Appendf(nil, `{"temp_c":%d,"cmm_used_mib":%d,"cmm_total_mib":7040}`, tempC, cmmUsed), 0o644); err != nil {
		c.t.Fatal(err)
	}
	if err := os.Rename(tmp, c.file); err != nil {
		c.t.Fatal(err)
	}
}

// npu is Options.NPU as edgectl serve wires it.
func (c *fakeCard) npu(ctx context.Context) (NPUReading, error) {
	card, err := c.eng.Card(ctx)
	return NPUReading{TempC: card.TempC, CMMUsedMB: card.CMMUsedMiB, CMMTotalMB: card.CMMTotalMiB}, err
}

func health(t *testing.T, ts *testServer) api.Health {
	t.Helper()
	code, b := get(t, ts.URL+"/health")
	var h api.Health
	if err := json.Unmarshal(b, &h); code != 200 || err != nil {
		t.Fatalf("/health %d %s: %v", code, b, err)
	}
	return h
}

func is(p *float64, want float64) bool { return p != nil && *p == want }

// /health tells a dashboard the lanes and their backends, the models in
// memory since when, temperatures and memory (host RAM, the card's CMM from
// axcl-smi), and says "hot" (still 200) while the card is above the limit,
// with one log line each way.
func TestHealthForDashboards(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "qwen-npu", `{}`, 1)
	card := newFakeCard(t, 61, 18)
	var logs safeLog
	ts := start(t, Options{ModelDirs: []string{root}, Logf: logs.printf, NPU: card.npu,
		sysRoot: fakeSys(t, 50), sampleEvery: 20 * time.Millisecond})

	h := health(t, ts)
	if h.Status != "ok" || h.Version == "" || h.ModelsLoaded != 0 || len(h.Models) != 0 {
		t.Errorf("idle server: %+v", h)
	}
	backends := map[string]string{}
	for _, l := range h.Lanes {
		backends[l.Name] = l.Backend
	}
	if backends["cpu"] != "cpu" || backends["axcl"] != "axcl" {
		t.Errorf("lanes %+v", h.Lanes)
	}
	if !is(h.Temperature.NPUC, 61) || !is(h.Temperature.HostC, 50) || h.Temperature.HotC != DefaultHotTempC {
		t.Errorf("temperature %+v", h.Temperature)
	}
	m := h.Memory
	if !is(m.RAMUsedMB, 1000) || !is(m.RAMTotalMB, 8000000.0/1024) || !is(m.NPUCMMUsedMB, 18) || !is(m.NPUCMMTotalMB, 7040) {
		t.Errorf("memory %+v", m)
	}

	before := time.Now()
	if code, _, b := post(t, ts.URL+"/api/generate", `{"model":"qwen-npu","prompt":"hi","stream":false}`); code != 200 {
		t.Fatalf("generate %d %s", code, b)
	}
	h = health(t, ts)
	if h.ModelsLoaded != 1 || len(h.Models) != 1 || h.Models[0].Lane != "axcl" || !strings.HasPrefix(h.Models[0].Name, "qwen-npu") ||
		h.Models[0].Since.Before(before) || h.Models[0].Since.After(time.Now()) {
		t.Errorf("models %+v (loaded after %v)", h.Models, before)
	}
	for _, l := range h.Lanes {
		if l.Name == "axcl" && (l.Loaded != 1 || l.MemoryMB <= 0) {
			t.Errorf("axcl lane %+v", l)
		}
	}

	card.set(91, 1218)
	eventually(t, "hot", func() bool { return health(t, ts).Status == "hot" })
	if h := health(t, ts); !is(h.Temperature.NPUC, 91) || !is(h.Memory.NPUCMMUsedMB, 1218) {
		t.Errorf("hot card: %+v %+v", h.Temperature, h.Memory)
	}
	if !strings.Contains(logs.String(), "hot: NPU at 91.0 °C, above the 85 °C limit") {
		t.Errorf("no hot log line:\n%s", logs.String())
	}
	card.set(70, 18)
	eventually(t, "cool", func() bool { return health(t, ts).Status == "ok" })
	if n := strings.Count(logs.String(), "warning: hot:"); n != 1 || !strings.Contains(logs.String(), "temperature back to 70.0 °C (NPU)") {
		t.Errorf("%d hot lines; log:\n%s", n, logs.String())
	}
}

// Without a card, the host's thermal zones decide "hot" against the
// configured limit; npu_c is null on a host whose NPU is not on its die,
// and the zones on an AX650 board (/proc/ax_proc), where it is.
func TestHealthHotFromThermalZones(t *testing.T) {
	sys := fakeSys(t, 72)
	var logs safeLog
	ts := start(t, Options{Logf: logs.printf, HotTempC: 65, sysRoot: sys, sampleEvery: 20 * time.Millisecond})
	h := health(t, ts)
	if h.Status != "hot" || !is(h.Temperature.HostC, 72) || h.Temperature.NPUC != nil || h.Temperature.HotC != 65 ||
		h.Memory.NPUCMMUsedMB != nil || h.Memory.NPUCMMTotalMB != nil {
		t.Errorf("%+v", h)
	}
	if !strings.Contains(logs.String(), "hot: host at 72.0 °C, above the 65 °C limit") {
		t.Errorf("log:\n%s", logs.String())
	}

	if err := os.MkdirAll(filepath.Join(sys, "proc/ax_proc"), 0o755); err != nil {
		t.Fatal(err)
	}
	board := start(t, Options{sysRoot: sys, sampleEvery: 20 * time.Millisecond})
	if h := health(t, board); !is(h.Temperature.NPUC, 72) || h.Status != "ok" {
		t.Errorf("AX650 board: %+v", h)
	}
}

// usage.metrics.hardware carries the seed's names through the OpenAI SDK:
// npu_temp_c from axcl-smi, npu_delta_t the card's rise while the answer
// streamed, ram_usage_mb (and the old ram_used_mb), cpu_load_pct, the CMM
// figures, and the lane's own numbers next to them.
func TestTelemetryHardwareNames(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "qwen-npu", `{"token_delay_ms": 120}`, 1)
	card := newFakeCard(t, 60, 18)
	ts := start(t, Options{ModelDirs: []string{root}, NPU: card.npu, sysRoot: fakeSys(t, 50), sampleEvery: 20 * time.Millisecond})
	eventually(t, "a first sample", func() bool { return is(ts.mon.latest().npu.TempC, 60) })

	client := ts.client()
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
		Model:         "qwen-npu",
		Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage("one two three four five six seven eight")},
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	})
	var raw string
	heated := false
	for stream.Next() {
		c := stream.Current()
		if !heated && len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
			// The card warms up while the answer streams (~2 s of tokens).
			card.set(67, 1218)
			eventually(t, "the monitor sees 67 °C", func() bool { return is(ts.mon.latest().npu.TempC, 67) })
			heated = true
		}
		if c.JSON.Usage.Valid() {
			raw = c.Usage.JSON.ExtraFields["metrics"].Raw()
		}
	}
	if err := stream.Err(); err != nil || !heated || raw == "" {
		t.Fatalf("stream: %v (heated %v, metrics %q)", err, heated, raw)
	}
	var m struct {
		Lane     string
		Hardware map[string]any
	}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatal(err)
	}
	hw := m.Hardware
	want := map[string]float64{"npu_temp_c": 67, "npu_delta_t": 7, "ram_usage_mb": 1000, "ram_used_mb": 1000, "temp_c": 50,
		"npu_cmm_used_mb": 1218, "npu_cmm_total_mb": 7040}
	for k, v := range want {
		if hw[k] != v {
			t.Errorf("%s = %v, want %v", k, hw[k], v)
		}
	}
	if _, ok := hw["cpu_load_pct"]; !ok || hw["npu_cmm_remain_mb"] == nil || m.Lane != "axcl" {
		t.Errorf("lane %q hardware %v", m.Lane, hw)
	}
}

// The monitor's npu_delta_t compares the last sample with the newest one
// taken before the request began (older ones are history).
func TestTelemetryDeltaUsesTheSampleBeforeTheRequest(t *testing.T) {
	sys := fakeSys(t, 40)
	os.MkdirAll(filepath.Join(sys, "proc/ax_proc"), 0o755) // SoC board: zones are the NPU
	m := newMonitor(Options{sysRoot: sys, Logf: t.Logf})
	zone := filepath.Join(sys, "sys/class/thermal/thermal_zone0/temp")
	read := func(c int) time.Time {
		os.WriteFile(zone, fmt.Appendf(nil, "%d\n", c*1000), 0o644)
		m.host.snapAt = time.Time{} // no 200 ms reuse in a test
		return m.read().at
	}
	read(40)
	startAt := read(45)
	time.Sleep(time.Millisecond)
	read(52)
	m.host.snapAt = time.Time{}
	hw := m.hardware(startAt)
	if !is(hw.NPUTempC, 52) || !is(hw.NPUDeltaT, 7) {
		t.Errorf("npu %v delta %v, want 52 and 7", *hw.NPUTempC, hw.NPUDeltaT)
	}
	if hw.NPUCMMUsedMB != nil {
		t.Errorf("CMM %v without axcl-smi", *hw.NPUCMMUsedMB)
	}
}
