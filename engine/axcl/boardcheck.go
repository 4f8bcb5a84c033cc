package axcl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Board checks (`edgectl doctor --device`): the board an AXCL card sits
// in, before serve loads a model on it. They live with the lane because
// they ask what it asks (axcl-smi, its PID and lock files); cmd/edgectl
// renders them in doctor's report. Each check reads; none changes anything.

// CMM a model needs, the figures the free-CMM check compares against.
// A w8a16 model of 0.5B–0.6B parameters (the smallest ax-llm ships) takes
// about 1 GiB of CMM with its KV cache; a 1.5B–1.7B one, the size most
// people run on an AX-M1, about 2.5 GiB.
const (
	DefaultMinFreeCMMMiB  = 1024 // below: no model fits, blocking
	DefaultWarnFreeCMMMiB = 2560 // below: only small models fit, warning
	DefaultHotC           = 85.0 // the limit serve's /health calls "hot"
)

// Severity of a BoardFinding, in doctor's words (doctor.Severity has the
// same values).
type Severity string

const (
	SeverityInfo     Severity = "info"
	SeverityWarning  Severity = "warning"
	SeverityFixable  Severity = "fixable"
	SeverityBlocking Severity = "blocking"
)

// BoardFinding is one result of a board check: what was found, the
// evidence read, and what fixes it.
type BoardFinding struct {
	ID       string
	Severity Severity
	Message  string
	Evidence string
	Fix      string
}

// BoardOptions for CheckBoard; zero values take the defaults.
type BoardOptions struct {
	Root           string // the board's filesystem root: "/" (tests give a fake tree)
	HotC           float64
	MinFreeCMMMiB  float64
	WarnFreeCMMMiB float64
}

func (o BoardOptions) withDefaults() BoardOptions {
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

// board collects the findings of one CheckBoard.
type board struct {
	o    BoardOptions
	card int // Options.Device
	out  []BoardFinding
}

func (b *board) add(f BoardFinding) { b.out = append(b.out, f) }

// CheckBoard runs the board checks on the card Options.Device names, with
// the lane's axcl-smi: AXCL driver, axcl-smi, free CMM, card temperature,
// runtimes a killed server left and stale lock files.
func (e *Engine) CheckBoard(ctx context.Context, opts BoardOptions) []BoardFinding {
	b := &board{o: opts.withDefaults(), card: e.opts.Device}
	b.checkDriver()
	card, err := e.Card(ctx)
	if b.checkSMI(card, err) {
		b.checkCMM(card)
		b.checkTemp(card)
	}
	b.checkLeftovers(e.FindLeftovers(ctx, filepath.Join(b.o.Root, "tmp", "axcl")))
	return b.out
}

const driverFix = "install the AXCL host driver (axclhost-firmware, task-axclhost, axclhost-dkms .debs for your kernel), run `systemctl restart systemd-modules-load`, and check `lspci` lists the card (Axera Semiconductor Device 0650)"

// checkDriver looks for the driver's device nodes (/dev/axcl_host, …) and
// its kernel module (/proc/modules names starting with axcl).
func (b *board) checkDriver() {
	root := b.o.Root
	nodes, _ := filepath.Glob(filepath.Join(root, "dev", "axcl*"))
	var mods []string
	modFile := filepath.Join(root, "proc", "modules")
	if data, err := os.ReadFile(modFile); err == nil {
		for line := range strings.Lines(string(data)) {
			if f := strings.Fields(line); len(f) > 0 && strings.HasPrefix(f[0], "axcl") {
				mods = append(mods, f[0])
			}
		}
	}
	if len(nodes) == 0 && len(mods) == 0 {
		b.add(BoardFinding{ID: "axcl-driver", Severity: SeverityBlocking, Message: "the AXCL driver is not loaded",
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
	b.add(BoardFinding{ID: "axcl-driver", Severity: SeverityInfo, Message: "the AXCL driver is loaded", Evidence: strings.Join(ev, "; ")})
}

// checkSMI reports whether axcl-smi ran and listed the card.
func (b *board) checkSMI(card Card, err error) bool {
	switch {
	case errors.Is(err, ErrNoSMI):
		b.add(BoardFinding{ID: "axcl-smi", Severity: SeverityBlocking, Message: "axcl-smi is not installed", Evidence: err.Error(),
			Fix: "install task-axclhost (it ships axcl-smi), or name the command in the serve config's axcl.smi and pass --config"})
		return false
	case err != nil:
		b.add(BoardFinding{ID: "axcl-smi", Severity: SeverityBlocking, Message: fmt.Sprintf("axcl-smi cannot read card %d", b.card), Evidence: err.Error(),
			Fix: "check the card is seated and listed by `lspci`, then " + driverFix})
		return false
	}
	b.add(BoardFinding{ID: "axcl-smi", Severity: SeverityInfo, Message: fmt.Sprintf("axcl-smi lists card %d (%s)", card.ID, card.Chip),
		Evidence: fmt.Sprintf("temperature %s, CMM %s / %s MiB", mib(card.TempC, "C"), mib(card.CMMUsedMiB, ""), mib(card.CMMTotalMiB, ""))})
	return true
}

func (b *board) checkCMM(card Card) {
	if card.CMMUsedMiB == nil || card.CMMTotalMiB == nil {
		b.add(BoardFinding{ID: "cmm", Severity: SeverityWarning, Message: "axcl-smi does not show the CMM pool",
			Evidence: fmt.Sprintf("card %d: no CMM-Usage column", b.card), Fix: "run `axcl-smi info --cmm -d " + strconv.Itoa(b.card) + "` by hand"})
		return
	}
	free := *card.CMMTotalMiB - *card.CMMUsedMiB
	ev := fmt.Sprintf("CMM %.0f MiB free (%.0f of %.0f MiB used)", free, *card.CMMUsedMiB, *card.CMMTotalMiB)
	fix := "stop what holds the CMM (`axcl-smi` lists its processes), or reset the card: axcl-smi reboot -d " + strconv.Itoa(b.card)
	switch {
	case free < b.o.MinFreeCMMMiB:
		b.add(BoardFinding{ID: "cmm", Severity: SeverityBlocking, Message: fmt.Sprintf("no model fits: less than %.0f MiB of CMM free (the smallest ax-llm models need about 1 GiB)", b.o.MinFreeCMMMiB),
			Evidence: ev, Fix: fix})
	case free < b.o.WarnFreeCMMMiB:
		b.add(BoardFinding{ID: "cmm", Severity: SeverityWarning, Message: fmt.Sprintf("only small models fit: less than %.0f MiB of CMM free (a 1.7B w8a16 model needs about 2.5 GiB)", b.o.WarnFreeCMMMiB),
			Evidence: ev, Fix: fix})
	default:
		b.add(BoardFinding{ID: "cmm", Severity: SeverityInfo, Message: "enough CMM free for a model", Evidence: ev})
	}
}

func (b *board) checkTemp(card Card) {
	if card.TempC == nil || *card.TempC <= b.o.HotC {
		return
	}
	b.add(BoardFinding{ID: "card-hot", Severity: SeverityWarning, Message: fmt.Sprintf("card %d runs above %.0f °C: the NPU throttles and may reset", b.card, b.o.HotC),
		Evidence: fmt.Sprintf("axcl-smi: %.0f °C", *card.TempC),
		Fix:      "improve airflow or add a heatsink to the M.2 card, and let it cool before loading a model"})
}

func (b *board) checkLeftovers(l Leftovers) {
	if len(l.Orphans) > 0 {
		b.add(BoardFinding{ID: "leftover-runtime", Severity: SeverityFixable, Message: fmt.Sprintf("%d runtime(s) left running by an edgectl server that is gone", len(l.Orphans)),
			Evidence: fmt.Sprintf("PIDs %s (PID files in %s)", joinInts(l.Orphans), l.StateDir),
			Fix:      fmt.Sprintf("edgectl serve ends them before it loads a model; or now: kill %s", joinInts(l.Orphans))})
	}
	if len(l.Live) > 0 {
		b.add(BoardFinding{ID: "runtime-running", Severity: SeverityInfo, Message: "a running edgectl server holds the card",
			Evidence: fmt.Sprintf("runtime PIDs %s", joinInts(l.Live))})
	}
	if len(l.StalePIDFiles) > 0 {
		b.add(BoardFinding{ID: "stale-pid-file", Severity: SeverityInfo, Message: "PID files of runtimes that have ended",
			Evidence: strings.Join(l.StalePIDFiles, ", "), Fix: "nothing to do: edgectl serve removes them at its next start"})
	}
	if len(l.StaleLocks) > 0 {
		b.add(BoardFinding{ID: "stale-locks", Severity: SeverityFixable, Message: fmt.Sprintf("%d runtime lock file(s) no process holds", len(l.StaleLocks)),
			Evidence: strings.Join(l.StaleLocks, ", "),
			Fix:      "edgectl serve removes them before it loads a model; or now: rm " + strings.Join(l.StaleLocks, " ")})
	}
	if l.Leak != "" {
		b.add(BoardFinding{ID: "cmm-leak", Severity: SeverityWarning, Message: "CMM in use with no edgectl runtime running",
			Evidence: l.Leak, Fix: "stop the program `axcl-smi` lists, or reset the card: axcl-smi reboot -d " + strconv.Itoa(b.card)})
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
