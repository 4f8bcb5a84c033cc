package bench

import (
	"context"
	"fmt"

	"github.com/edgectl/edgectl/internal/errkind"
)

// Comparison is several models measured in turn in one process: each
// one's Report, and its rates over the first model's taken within each
// round (Compare), median, minimum and maximum over the rounds; the first
// model's ratios are 1.
type Comparison struct {
	Reports      []*Report `json:"reports"`
	DecodeRatio  []Stat    `json:"decode_ratio"`
	PrefillRatio []Stat    `json:"prefill_ratio"`
}

// Compare benchmarks the models at paths on the CPU engine in one
// process, in turns: each is loaded and warmed up (Run's rules), then
// each of o.Runs rounds runs every model once, the first of a round
// rotating, so that all of them meet the same states of a shared machine
// (memory whose bandwidth changes, other load) and the ratios compare
// runs minutes apart at most. The read probe before each run is in each
// Report, as Run's. The models stay loaded together: their memory adds
// up.
func Compare(ctx context.Context, paths []string, o Options) (*Comparison, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	if len(paths) < 2 {
		return nil, errkind.Errorf(errkind.Usage, "compare needs at least two models (got %d)", len(paths))
	}
	sessions := make([]*session, 0, len(paths))
	defer func() {
		for _, s := range sessions {
			s.m.Close()
		}
	}()
	for _, p := range paths {
		s, err := openSession(ctx, p, o)
		if err != nil {
			return nil, err
		}
		s.label = p + ": "
		sessions = append(sessions, s)
	}
	n := len(sessions)
	runs := make([][]run, n)
	decode, prefill := make([][]float64, n), make([][]float64, n)
	for round := range o.Runs {
		round1 := make([]run, n)
		for j := range n {
			k := (round + j) % n
			r, err := sessions[k].measure(ctx, round+1)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", paths[k], err)
			}
			round1[k] = r
			runs[k] = append(runs[k], r)
		}
		for k := range n {
			decode[k] = append(decode[k], round1[k].decodeTPS/round1[0].decodeTPS)
			prefill[k] = append(prefill[k], round1[k].prefillTPS/round1[0].prefillTPS)
		}
	}
	c := &Comparison{}
	for k, s := range sessions {
		c.Reports = append(c.Reports, s.report(runs[k]))
		c.DecodeRatio = append(c.DecodeRatio, stat(decode[k]))
		c.PrefillRatio = append(c.PrefillRatio, stat(prefill[k]))
	}
	return c, nil
}
