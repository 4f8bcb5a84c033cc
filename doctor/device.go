package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/edgectl/edgectl/engine/axcl"
)

// Device checks: the board an AXCL card sits in, before serve loads a
// model on it. Each check reads (the driver's device nodes and module,
// axcl-smi, the lane's PID and lock files); none changes anything.

// CMM a model needs, the figures the free-CMM check compares against.
// A w8a16 model of 0.5B–0.6B parameters (the smallest ax-llm ships) takes
// about 1 GiB of CMM with its KV cache; a 1.5B–1.7B one, the size most
// people run on an AX-M1, about 2.5 GiB.
const (
	DefaultMinFreeCMMMiB  = 1024 // below: no model fits, blocking
	DefaultWarnFreeCMMMiB = 2560 // below: only small models fit, warning
	DefaultHotC           = 85.0 // the limit serve's /health calls "hot"
)

// DeviceOptions for CheckDevice; zero values take the defaults.
type DeviceOptions struct {
	Root           string   // the board's filesystem root: "/" (tests give a fake tree)
	SMI            []string // the axcl-smi command (serve config's axcl.smi); nil: axcl-smi
	Card           int      // the card axcl-smi reports on (axcl.device)
	HotC           float64
	MinFreeCMMMiB  float64
	WarnFreeCMMMiB float64
}

func (o DeviceOptions) withDefaults() DeviceOptions {
	if o.Root == "" {
		o.Root = "/"
	}
	if o.HotC <= 0 {
		o.HotC = DefaultHotC
	}
	if o.MinFreeCMMMiB <= 0 {
		o.MinFreeCMMMiB = DefaultMinFreeCMMMiB
	}
	if o.WarnFreeCMMMiB <= 0 {
		o.WarnFreeCMMMiB = DefaultWarnFreeCMMMiB
	}
	return o
}

// CheckDevice runs the device checks: AXCL driver, axcl-smi, free CMM,
// card temperature, runtimes a killed server left and stale lock files.
func CheckDevice(ctx context.Context, opts DeviceOptions) *Report {
	o := opts.withDefaults()
	c := &checker{r: &Report{Path: fmt.Sprintf("card %d", o.Card), Target: "ax650", Kind: "device"}}
	c.checkDriver(o.Root)
	eng := axcl.New(axcl.Options{SMI: o.SMI, Device: o.Card, Logf: func(string, ...any) {}})
	card, err := eng.Card(ctx)
	if c.checkSMI(card, err, o) {
		c.checkCMM(card, o)
		c.checkTemp(card, o)
	}
	c.checkLeftovers(eng.FindLeftovers(ctx, filepath.Join(o.Root, "tmp", "axcl")), o)
	c.finish()
	return c.r
}

const driverFix = "install the AXCL host driver (axclhost-firmware, task-axclhost, axclhost-dkms .debs for your kernel), run `systemctl restart systemd-modules-load`, and check `lspci` lists the card (Axera Semiconductor Device 0650)"

// checkDriver looks for the driver's device nodes (/dev/axcl_host, …) and
// its kernel module (/proc/modules names starting with axcl).
func (c *checker) checkDriver(root string) {
	nodes, _ := filepath.Glob(filepath.Join(root, "dev", "axcl*"))
	var mods []string
	modFile := filepath.Join(root, "proc", "modules")
	if b, err := os.ReadFile(modFile); err == nil {
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "axcl") {
				mods = append(mods, f[0])
			}
		}
	}
	if len(nodes) == 0 && len(mods) == 0 {
		c.add(Finding{ID: "axcl-driver", Severity: Blocking, Message: "the AXCL driver is not loaded",
			Evidence: fmt.Sprintf("no %s* device node and no axcl* module in %s", filepath.Join(root, "dev", "axcl"), modFile),
			Fix:      driverFix})
		return
	}
	ev := []string{}
	if len(nodes) > 0 {
		ev = append(ev, "device nodes "+strings.Join(nodes, ", "))
	}
	if len(mods) > 0 {
		ev = append(ev, "modules "+strings.Join(mods, ", "))
	}
	c.add(Finding{ID: "axcl-driver", Severity: Info, Message: "the AXCL driver is loaded", Evidence: strings.Join(ev, "; ")})
}

// checkSMI reports whether axcl-smi ran and listed the card.
func (c *checker) checkSMI(card axcl.Card, err error, o DeviceOptions) bool {
	switch {
	case errors.Is(err, axcl.ErrNoSMI):
		c.add(Finding{ID: "axcl-smi", Severity: Blocking, Message: "axcl-smi is not installed", Evidence: err.Error(),
			Fix: "install task-axclhost (it ships axcl-smi), or name the command in the serve config's axcl.smi and pass --config"})
		return false
	case err != nil:
		c.add(Finding{ID: "axcl-smi", Severity: Blocking, Message: fmt.Sprintf("axcl-smi cannot read card %d", o.Card), Evidence: err.Error(),
			Fix: "check the card is seated and listed by `lspci`, then " + driverFix})
		return false
	}
	c.add(Finding{ID: "axcl-smi", Severity: Info, Message: fmt.Sprintf("axcl-smi lists card %d (%s)", card.ID, card.Chip),
		Evidence: fmt.Sprintf("temperature %s, CMM %s / %s MiB", mib(card.TempC, "C"), mib(card.CMMUsedMiB, ""), mib(card.CMMTotalMiB, ""))})
	return true
}

func (c *checker) checkCMM(card axcl.Card, o DeviceOptions) {
	if card.CMMUsedMiB == nil || card.CMMTotalMiB == nil {
		c.add(Finding{ID: "cmm", Severity: Warning, Message: "axcl-smi does not show the CMM pool",
			Evidence: fmt.Sprintf("card %d: no CMM-Usage column", o.Card), Fix: "run `axcl-smi info --cmm -d " + strconv.Itoa(o.Card) + "` by hand"})
		return
	}
	free := *card.CMMTotalMiB - *card.CMMUsedMiB
	ev := fmt.Sprintf("CMM %.0f MiB free (%.0f of %.0f MiB used)", free, *card.CMMUsedMiB, *card.CMMTotalMiB)
	fix := "stop what holds the CMM (`axcl-smi` lists its processes), or reset the card: axcl-smi reboot -d " + strconv.Itoa(o.Card)
	switch {
	case free < o.MinFreeCMMMiB:
		c.add(Finding{ID: "cmm", Severity: Blocking, Message: fmt.Sprintf("no model fits: less than %.0f MiB of CMM free (the smallest ax-llm models need about 1 GiB)", o.MinFreeCMMMiB),
			Evidence: ev, Fix: fix})
	case free < o.WarnFreeCMMMiB:
		c.add(Finding{ID: "cmm", Severity: Warning, Message: fmt.Sprintf("only small models fit: less than %.0f MiB of CMM free (a 1.7B w8a16 model needs about 2.5 GiB)", o.WarnFreeCMMMiB),
			Evidence: ev, Fix: fix})
	default:
		c.add(Finding{ID: "cmm", Severity: Info, Message: "enough CMM free for a model", Evidence: ev})
	}
}

func (c *checker) checkTemp(card axcl.Card, o DeviceOptions) {
	if card.TempC == nil || *card.TempC <= o.HotC {
		return
	}
	c.add(Finding{ID: "card-hot", Severity: Warning, Message: fmt.Sprintf("card %d runs above %.0f °C: the NPU throttles and may reset", o.Card, o.HotC),
		Evidence: fmt.Sprintf("axcl-smi: %.0f °C", *card.TempC),
		Fix:      "improve airflow or add a heatsink to the M.2 card, and let it cool before loading a model"})
}

func (c *checker) checkLeftovers(l axcl.Leftovers, o DeviceOptions) {
	if len(l.Orphans) > 0 {
		c.add(Finding{ID: "leftover-runtime", Severity: Fixable, Message: fmt.Sprintf("%d runtime(s) left running by an edgectl server that is gone", len(l.Orphans)),
			Evidence: fmt.Sprintf("PIDs %s (PID files in %s)", joinInts(l.Orphans), l.StateDir),
			Fix:      fmt.Sprintf("edgectl serve ends them before it loads a model; or now: kill %s", joinInts(l.Orphans))})
	}
	if len(l.Live) > 0 {
		c.add(Finding{ID: "runtime-running", Severity: Info, Message: "a running edgectl server holds the card",
			Evidence: fmt.Sprintf("runtime PIDs %s", joinInts(l.Live))})
	}
	if len(l.StalePIDFiles) > 0 {
		c.add(Finding{ID: "stale-pid-file", Severity: Info, Message: "PID files of runtimes that have ended",
			Evidence: strings.Join(l.StalePIDFiles, ", "), Fix: "nothing to do: edgectl serve removes them at its next start"})
	}
	if len(l.StaleLocks) > 0 {
		c.add(Finding{ID: "stale-locks", Severity: Fixable, Message: fmt.Sprintf("%d runtime lock file(s) no process holds", len(l.StaleLocks)),
			Evidence: strings.Join(l.StaleLocks, ", "),
			Fix:      "edgectl serve removes them before it loads a model; or now: rm " + strings.Join(l.StaleLocks, " ")})
	}
	if l.Leak != "" {
		c.add(Finding{ID: "cmm-leak", Severity: Warning, Message: "CMM in use with no edgectl runtime running",
			Evidence: l.Leak, Fix: "stop the program `axcl-smi` lists, or reset the card: axcl-smi reboot -d " + strconv.Itoa(o.Card)})
	}
}

func mib(v *float64, unit string) string {
	if v == nil {
		return "--"
	}
	return strconv.FormatFloat(*v, 'f', 0, 64) + unit
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, " ")
}
