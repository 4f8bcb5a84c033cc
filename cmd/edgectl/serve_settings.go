package main

import (
	"time"

	"github.com/edgectl/edgectl/api"
	"github.com/edgectl/edgectl/internal/envconfig"
	"github.com/edgectl/edgectl/internal/errkind"
	"github.com/edgectl/edgectl/serve"
)

// serveSettings are serve's settings once every source has been applied.
type serveSettings struct {
	Models       []string
	Addr         string
	APIKey       string
	KeepAlive    time.Duration // serve.KeepAliveNone for 0
	MaxQueue     int
	Watchdog     time.Duration
	Origins      []string
	AllowedHosts []string
	Lanes        map[string]serve.LaneConfig
	HotTempC     float64 // /health's "hot" limit
}

// layered is the one precedence rule for serve's settings: a flag given on
// the command line, then the --config file, then the environment, then the
// flag's default (which is what flag holds when it was not given).
func layered[T any](flag T, given bool, file T, inFile bool, env T, inEnv bool) T {
	switch {
	case given:
		return flag
	case inFile:
		return file
	case inEnv:
		return env
	}
	return flag
}

// resolveServe applies layered to every serve setting, so no setting can
// take another order by accident (a config file's lanes once overrode
// budgets given as flags).
func resolveServe(opts *serveOptions, fc *serve.FileConfig) (serveSettings, error) {
	given := opts.changed
	if given == nil {
		given = func(string) bool { return false }
	}
	var s serveSettings

	s.Models = layered(opts.Models, given("models"), fc.Models, len(fc.Models) > 0,
		envconfig.Models.Get(), envconfig.Models.IsSet())

	var envAddr string
	if !given("addr") && fc.Addr == "" { // a value that would not be used is not judged
		a, err := envconfig.Host.Get()
		if err != nil {
			return s, usagef("%v", err)
		}
		envAddr = a
	}
	s.Addr = layered(opts.Addr, given("addr"), fc.Addr, fc.Addr != "", envAddr, envAddr != "")

	s.APIKey = layered(opts.APIKey, given("api-key"), fc.APIKey, fc.APIKey != "",
		envconfig.APIKey.Get(), envconfig.APIKey.IsSet())
	if err := serve.CheckAddr(s.Addr, s.APIKey); err != nil {
		return s, errkind.Wrap(errkind.Usage, err)
	}

	s.Origins = layered(opts.Origins, given("origins"), fc.Origins, len(fc.Origins) > 0,
		envconfig.Origins.Get(), envconfig.Origins.IsSet())
	s.AllowedHosts = layered(opts.AllowedHosts, given("allowed-hosts"), fc.AllowedHosts, len(fc.AllowedHosts) > 0,
		envconfig.AllowedHosts.Get(), envconfig.AllowedHosts.IsSet())

	keepAlive, err := parseKeepAlive("--keep-alive", opts.KeepAlive)
	if err != nil {
		return s, err
	}
	var envKeepAlive time.Duration
	if envconfig.KeepAlive.IsSet() && !given("keep-alive") && fc.KeepAlive == nil {
		if envKeepAlive, err = parseKeepAlive(envconfig.KeepAlive.Name, envconfig.KeepAlive.Get()); err != nil {
			return s, err
		}
	}
	var fileKeepAlive time.Duration
	if fc.KeepAlive != nil {
		fileKeepAlive = fc.KeepAlive.Duration
	}
	s.KeepAlive = layered(keepAlive, given("keep-alive"), fileKeepAlive, fc.KeepAlive != nil,
		envKeepAlive, envconfig.KeepAlive.IsSet())
	if s.KeepAlive == 0 {
		s.KeepAlive = serve.KeepAliveNone
	}

	s.MaxQueue = layered(opts.MaxQueue, given("max-queue"), fc.MaxQueue, fc.MaxQueue > 0, 0, false)
	var fileWatchdog time.Duration
	if fc.Watchdog != "" {
		fileWatchdog, _ = time.ParseDuration(fc.Watchdog) // ReadConfig checked it
	}
	s.Watchdog = layered(opts.Watchdog, given("watchdog"), fileWatchdog, fc.Watchdog != "", 0, false)

	var fileHot float64
	if fc.HotTempC != nil {
		fileHot = *fc.HotTempC
	}
	s.HotTempC = layered(opts.HotTemp, given("hot-temp"), fileHot, fc.HotTempC != nil, 0, false)
	if s.HotTempC <= 0 || s.HotTempC > 150 {
		return s, usagef("hot temperature must be between 0 and 150 °C (got %g from --hot-temp or hot_temp_c)", s.HotTempC)
	}

	s.Lanes, err = resolveLanes(opts, given, fc)
	return s, err
}

// resolveLanes starts from the default lanes, lets the config file replace
// whole lanes, then applies the budget and context flags that were given.
func resolveLanes(opts *serveOptions, given func(string) bool, fc *serve.FileConfig) (map[string]serve.LaneConfig, error) {
	lanes := serve.DefaultLanes()
	for name, lc := range fc.Lanes {
		lanes[name] = lc
	}
	if given("npu-budget-mb") {
		if opts.NPUBudget < 0 {
			return nil, usagef("--npu-budget-mb must be ≥ 0 (got %d)", opts.NPUBudget)
		}
		l := lanes[serve.LaneAxcl]
		l.BudgetMB = opts.NPUBudget
		lanes[serve.LaneAxcl] = l
	}
	if given("cpu-budget-mb") {
		if opts.CPUBudget < 0 {
			return nil, usagef("--cpu-budget-mb must be ≥ 0 (got %d)", opts.CPUBudget)
		}
		l := lanes[serve.LaneCPU]
		l.BudgetMB, l.MaxLoaded = opts.CPUBudget, 0
		if opts.CPUBudget == 0 {
			l.MaxLoaded = serve.DefaultLanes()[serve.LaneCPU].MaxLoaded // 0 means "up to 3 models"
		}
		lanes[serve.LaneCPU] = l
	}
	if opts.Context < 0 {
		return nil, usagef("--ctx must be ≥ 0 (got %d)", opts.Context)
	}
	if given("ctx") && opts.Context > 0 {
		l := lanes[serve.LaneCPU]
		l.Context = opts.Context
		lanes[serve.LaneCPU] = l
	}
	return lanes, nil
}

func parseKeepAlive(source, v string) (time.Duration, error) {
	d, err := api.ParseKeepAlive(v)
	if err != nil {
		return 0, usagef("%s: %v", source, err)
	}
	return d, nil
}
