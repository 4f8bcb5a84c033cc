// fakerknnhelper stands in for engine/rknnrt's Python helper in tests: it
// speaks the same framed protocol (engine/rknnrt/protocol.go) and "runs"
// each shard by adding 1 to the shard's first input, so a chain of n
// shards maps x to x+n and the host's scaling shows in the result.
//
// It appends what it does, one JSON object a line, to $FAKE_RKNN_LOG
// (load and run of each shard with its core, quit), so tests see which
// shard ran on which core and in what order. Before each run it reads and
// removes $FAKE_RKNN_CONTROL, a one-shot order: "fail N" (an error frame
// at shard N), "hang N" (stop answering at shard N), "crash N" (exit 3 at
// shard N), "sleep N MS" (take MS milliseconds at shard N, then go on),
// "garble" (a result for the wrong frame). FAKE_RKNN_LOAD_FAIL=1 fails
// the load.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/edgectl/edgectl/engine/rknnrt"
)

var logFile *os.File

func record(v map[string]any) {
	if logFile == nil {
		return
	}
	v["pid"] = os.Getpid()
	b, _ := json.Marshal(v)
	logFile.Write(append(b, '\n'))
}

func main() {
	if p := os.Getenv("FAKE_RKNN_LOG"); p != "" {
		f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		logFile = f
	}
	in := bufio.NewReader(os.Stdin)
	out := os.Stdout
	fmt.Fprintln(os.Stderr, "fake rknn helper starting")
	load, _, err := rknnrt.ReadFrame(in, 0)
	if err != nil || load.Op != rknnrt.OpLoad {
		fmt.Fprintf(os.Stderr, "want a load frame: %v %q\n", err, load.Op)
		os.Exit(2)
	}
	if os.Getenv("FAKE_RKNN_LOAD_FAIL") == "1" {
		rknnrt.WriteFrame(out, rknnrt.Header{Op: rknnrt.OpError, Message: "load_rknn returned -1 (fake)"}, nil)
		os.Exit(1)
	}
	var timings []rknnrt.Timing
	for _, s := range load.Shards {
		if _, err := os.Stat(s.Path); err != nil {
			rknnrt.WriteFrame(out, rknnrt.Header{Op: rknnrt.OpError, Message: err.Error()}, nil)
			os.Exit(1)
		}
		record(map[string]any{"event": "load", "index": s.Index, "core": s.Core, "path": s.Path})
		timings = append(timings, rknnrt.Timing{Index: s.Index, Core: s.Core, MS: 1})
	}
	rknnrt.WriteFrame(out, rknnrt.Header{Op: rknnrt.OpReady, Runtime: "fake", Timings: timings}, nil)
	for {
		h, payload, err := rknnrt.ReadFrame(in, 1<<30)
		if err != nil || h.Op == rknnrt.OpQuit {
			record(map[string]any{"event": "quit", "eof": err != nil})
			return
		}
		order, at, ms := control()
		env := map[string][]float32{}
		off := 0
		for _, t := range h.Tensors {
			n := 4 * rknnrt.Elements(t.Shape)
			env[t.Name] = rknnrt.Floats(payload[off : off+n])
			off += n
		}
		if order == "garble" {
			rknnrt.WriteFrame(out, rknnrt.Header{Op: rknnrt.OpResult, ID: h.ID + 7}, nil)
			continue
		}
		var steps []rknnrt.Timing
		failed := false
		for _, s := range load.Shards {
			record(map[string]any{"event": "run", "id": h.ID, "index": s.Index, "core": s.Core})
			if s.Index == at {
				switch order {
				case "fail":
					i := s.Index
					rknnrt.WriteFrame(out, rknnrt.Header{Op: rknnrt.OpError, ID: h.ID, Shard: &i,
						Message: fmt.Sprintf("inference returned None on core %d (fake)", s.Core)}, nil)
					failed = true
				case "hang":
					fmt.Fprintln(os.Stderr, "hanging")
					time.Sleep(time.Hour)
				case "sleep":
					time.Sleep(time.Duration(ms) * time.Millisecond)
				case "crash":
					fmt.Fprintln(os.Stderr, "Segmentation fault (fake)")
					os.Exit(3)
				}
			}
			if failed {
				break
			}
			x := env[s.Inputs[0].Name]
			for _, o := range s.Outputs {
				y := make([]float32, rknnrt.Elements(o.Shape))
				for k := range y {
					y[k] = x[k%len(x)] + 1
				}
				env[o.Name] = y
			}
			steps = append(steps, rknnrt.Timing{Index: s.Index, Core: s.Core, MS: 0.5})
		}
		if failed {
			continue
		}
		var tensors []rknnrt.TensorSpec
		var body []byte
		for _, name := range load.Outputs {
			var shape []int
			for _, s := range load.Shards {
				for _, o := range s.Outputs {
					if o.Name == name {
						shape = o.Shape
					}
				}
			}
			tensors = append(tensors, rknnrt.TensorSpec{Name: name, Shape: shape})
			body = rknnrt.PutFloats(body, env[name])
		}
		rknnrt.WriteFrame(out, rknnrt.Header{Op: rknnrt.OpResult, ID: h.ID, Tensors: tensors, Timings: steps, MS: 2}, body)
	}
}

// control reads and removes the one-shot order for this run: its word,
// shard and argument.
func control() (string, int, int) {
	p := os.Getenv("FAKE_RKNN_CONTROL")
	if p == "" {
		return "", -1, 0
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", -1, 0
	}
	os.Remove(p)
	f := append(strings.Fields(string(b)), "", "", "")
	at, err := strconv.Atoi(f[1])
	if err != nil {
		at = -1
	}
	arg, _ := strconv.Atoi(f[2])
	return f[0], at, arg
}
