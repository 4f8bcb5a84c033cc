package cpu

import (
	"sync"
	"time"

	"github.com/edgectl/edgectl/engine"
)

// The decode roofline: a decode step streams every weight once, plus the
// KV rows of the cached positions, so bytes per token over the machine's
// read bandwidth bounds tok/s. The benchmarks (bench_test.go) and
// `edgectl bench` (engine.Roofline, package bench) both take their bytes
// and their bandwidth probe from here.

var _ engine.Roofline = (*model)(nil)

// DecodeBytes implements engine.Roofline: the weights a token's forward
// pass reads (weightBytes: layer matrices and head as held in memory) and
// the float32 K and V rows of every layer and KV head for cached+1
// positions (the cache and the new token's own row).
func (m *model) DecodeBytes(cached int) (weights, kv int64) {
	return m.weightBytes(), m.arch.kvBytesPerPosition() * int64(max(cached, 0)+1)
}

// probeMinBytes is the least the bandwidth probe reads: more than the
// last-level cache of the CPUs edgectl runs on (32–96 MiB per CCD on the
// largest desktop and server parts it is measured on), so that a small
// model's weights, which stay in the caches, do not report the cache's
// bandwidth as the memory's.
const probeMinBytes = 256 << 20

// ReadBandwidth implements engine.Roofline: the rate readRate measures
// over the model's weights, topped up with a scratch buffer to
// probeMinBytes.
func (m *model) ReadBandwidth(threads int) float64 {
	if threads <= 0 {
		threads = m.pool.n
	}
	regions := m.weightRegions()
	var total int
	for _, r := range regions {
		total += len(r)
	}
	if total < probeMinBytes {
		pad, mapped := allocAnon(probeMinBytes - total)
		for i := range pad { // touched, or reads would hit the shared zero page
			pad[i] = byte(i)
		}
		if mapped {
			defer freeAnon(pad)
		}
		regions = append(regions, pad)
	}
	return readRate(m.kern.readSum, regions, threads)
}

// weightRegions are the bytes of the weights a decode step streams (the
// packed or float data of every layer matrix and the head; per-row scales
// are left out, a fraction of a percent).
func (m *model) weightRegions() [][]byte {
	var regions [][]byte
	var add func(l linear)
	add = func(l linear) {
		switch w := l.(type) {
		case *ternLinear:
			regions = append(regions, w.data)
		case *floatRows:
			regions = append(regions, w.raw)
		case *q8Linear:
			regions = append(regions, unsafeBytes(w.w))
		case *quantLinear:
			regions = append(regions, w.raw)
		case *gptqLinear:
			regions = append(regions, w.w)
		case *scaledLinear:
			add(w.linear)
		}
	}
	for _, L := range m.w.layers {
		for _, w := range []linear{L.q, L.k, L.v, L.o, L.gate, L.up, L.down} {
			add(w)
		}
	}
	add(m.w.head)
	return regions
}

// readRate is the best of three passes of threads cores reading regions
// with readSum, each thread its share of every region, in bytes per second.
func readRate(readSum func([]byte) uint64, regions [][]byte, threads int) float64 {
	threads = max(1, min(threads, len(readSink)/16))
	var total int64
	for _, r := range regions {
		total += int64(len(r))
	}
	best := 0.0
	for range 3 {
		start := time.Now()
		var wg sync.WaitGroup
		for t := range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i, r := range regions {
					// Each thread reads its share of every region.
					lo, hi := len(r)*t/threads, len(r)*(t+1)/threads
					readSink[t*16] += readSum(r[lo:hi]) + uint64(i)
				}
			}()
		}
		wg.Wait()
		best = max(best, float64(total)/time.Since(start).Seconds())
	}
	return best
}

// readSink keeps the sums readRate computes alive (one cache line per
// thread, so the threads do not share one).
var readSink [64 * 16]uint64
