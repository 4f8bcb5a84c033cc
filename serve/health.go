package serve

import (
	"net/http"
	"sort"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/internal/version"
)

// handleHealth answers 200 whenever the server is up, "hot" included, so
// readiness probes (scripts/demo.sh's curl -f) keep working; dashboards
// read the status field.
func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, s.health())
}

func (s *Server) health() api.Health {
	smp := s.mon.latest()
	loaded := s.sched.Loaded()
	h := api.Health{Status: "ok", Version: version.String(), ModelsLoaded: len(loaded),
		UptimeS: smp.at.Sub(s.mon.started).Seconds(), Lanes: []api.HealthLane{}, Models: []api.HealthModel{}}
	if s.mon.isHot() {
		h.Status = "hot"
	}
	_, count, busy, used := s.sched.stats()
	for name, ln := range s.sched.lanes { // fixed after New
		h.Lanes = append(h.Lanes, api.HealthLane{Name: name, Backend: ln.eng.Name(), Loaded: count[name], Busy: busy[name],
			MemoryMB: float64(used[name]) / (1 << 20), BudgetMB: ln.cfg.BudgetMB})
	}
	sort.Slice(h.Lanes, func(i, j int) bool { return h.Lanes[i].Name < h.Lanes[j].Name })
	for _, l := range loaded {
		h.Models = append(h.Models, api.HealthModel{Name: l.Entry.Name, Lane: l.Lane, Since: l.Since, Busy: l.Busy})
	}
	h.Temperature = api.HealthTemp{NPUC: s.mon.npuTemp(smp), HostC: smp.host.TempC, HotC: s.mon.hotC, SampledAt: smp.at}
	h.Memory = api.HealthMemory{RAMUsedMB: smp.host.RAMUsedMB, RAMTotalMB: smp.host.RAMTotalMB,
		NPUCMMUsedMB: smp.npu.CMMUsedMB, NPUCMMTotalMB: smp.npu.CMMTotalMB}
	return h
}
