package serve

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgectl/edgectl/engine"
	"github.com/edgectl/edgectl/engine/cpu"
)

// The load test (make loadtest):
//
//	go test ./serve -run '^$' -bench BenchmarkLoad100Clients -benchtime 1x
//	go test ./serve -run '^$' -bench BenchmarkServerOverhead -benchtime 40x
//
// BenchmarkLoad100Clients: 100 concurrent clients, 3 requests each, spread
// over 3 copies of the tinystories model on a CPU lane whose budget holds 2.
// Every request must end in a complete answer or a 503; afterwards, once
// the models are unloaded, goroutines and file descriptors must be back to
// where they started.

func openFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents)
}

func BenchmarkLoad100Clients(b *testing.B) {
	root := b.TempDir()
	for _, n := range []string{"m1", "m2", "m3"} {
		tinyDir(b, root, n)
	}
	for i := 0; i < b.N; i++ {
		ts := start(b, Options{ModelDirs: []string{root}, MaxQueue: 24, Logf: func(string, ...any) {},
			Lanes: map[string]LaneConfig{LaneCPU: {BudgetMB: 6, Parallel: 2}}})
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 100}}
		runtime.GC()
		g0, fd0 := runtime.NumGoroutine(), openFDs()

		var ok, busy, bad atomic.Int64
		var badMsg atomic.Value
		var wg sync.WaitGroup
		t0 := time.Now()
		for c := 0; c < 100; c++ {
			wg.Add(1)
			go func(c int) {
				defer wg.Done()
				for r := 0; r < 3; r++ {
					model := fmt.Sprintf("m%d", (c+r)%3+1)
					stream := (c+r)%2 == 0
					body := fmt.Sprintf(`{"model":%q,"prompt":"Once upon a time","stream":%v,"options":{"num_predict":8,"temperature":0}}`, model, stream)
					resp, err := client.Post(ts.URL+"/api/generate", "application/json", strings.NewReader(body))
					if err != nil {
						bad.Add(1)
						badMsg.Store(err.Error())
						continue
					}
					data, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					switch {
					case resp.StatusCode == 503 && resp.Header.Get("Retry-After") != "":
						busy.Add(1)
					case resp.StatusCode == 200 && complete(data):
						ok.Add(1)
					default:
						bad.Add(1)
						badMsg.Store(fmt.Sprintf("%d %.200s", resp.StatusCode, data))
					}
				}
			}(c)
		}
		wg.Wait()
		elapsed := time.Since(t0)
		if bad.Load() > 0 {
			b.Fatalf("%d requests neither answered nor 503: %v", bad.Load(), badMsg.Load())
		}
		if ok.Load() == 0 {
			b.Fatal("no request was answered")
		}
		evictions := metric(b, ts, "edgectl_evictions_total")
		// Unload everything, drop client connections, and let goroutines end.
		for _, n := range []string{"m1", "m2", "m3"} {
			post(b, ts.URL+"/api/generate", `{"model":"`+n+`","keep_alive":0}`)
		}
		eventually(b, "all unloaded", func() bool { return len(psNames(b, ts)) == 0 })
		client.CloseIdleConnections()
		http.DefaultClient.CloseIdleConnections()
		var g1, fd1 int
		deadline := time.Now().Add(5 * time.Second)
		for {
			runtime.GC()
			g1, fd1 = runtime.NumGoroutine(), openFDs()
			if (g1 <= g0 && fd1 <= fd0) || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if g1 > g0 || fd1 > fd0 {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			b.Fatalf("leak: goroutines %d → %d, fds %d → %d\n%s", g0, g1, fd0, fd1, buf[:n])
		}
		b.ReportMetric(float64(ok.Load()), "answered")
		b.ReportMetric(float64(busy.Load()), "503s")
		b.ReportMetric(float64(bad.Load()), "failed")
		b.ReportMetric(float64(ok.Load())/elapsed.Seconds(), "answers/s")
		b.Logf("300 requests in %v: %d answered, %d got 503, 0 failed; evictions %s; goroutines %d→%d, fds %d→%d",
			elapsed.Round(time.Millisecond), ok.Load(), busy.Load(), evictions, g0, g1, fd0, fd1)
	}
}

// complete reports whether an NDJSON or JSON /api/generate body ended with
// done:true and no error line.
func complete(body []byte) bool {
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	last := ""
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"error"`) {
			return false
		}
		last = sc.Text()
	}
	return strings.Contains(last, `"done":true`)
}

// BenchmarkServerOverhead compares one greedy 8-token generation through
// the HTTP API (loaded model, one client) with the same generation on the
// engine directly, and reports the server's added latency as a ratio.
func BenchmarkServerOverhead(b *testing.B) {
	root := b.TempDir()
	dir := tinyDir(b, root, "m")
	ts := start(b, Options{ModelDirs: []string{root}, Logf: func(string, ...any) {}})
	m, err := cpu.New().Load(context.Background(), dir, engine.LoadOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	zero := 0.0
	req := engine.Request{Prompt: "Once upon a time", MaxTokens: 8, Sampling: engine.Sampling{Temperature: &zero}}
	body := `{"model":"m","prompt":"Once upon a time","stream":false,"options":{"num_predict":8,"temperature":0}}`
	post(b, ts.URL+"/api/generate", body) // load it
	var direct, server time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		s, _ := m.NewSession()
		if _, err := s.Generate(context.Background(), req, func(engine.Token) error { return nil }); err != nil {
			b.Fatal(err)
		}
		s.Close()
		t1 := time.Now()
		if code, _, out := post(b, ts.URL+"/api/generate", body); code != 200 {
			b.Fatalf("%d %s", code, out)
		}
		direct += t1.Sub(t0)
		server += time.Since(t1)
	}
	b.ReportMetric(float64(direct.Microseconds())/float64(b.N), "direct-µs/req")
	b.ReportMetric(float64(server.Microseconds())/float64(b.N), "server-µs/req")
	b.ReportMetric(float64(server)/float64(direct), "server/direct")
}
