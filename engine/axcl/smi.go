package axcl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var reSMICMM = regexp.MustCompile(`(?m)^CMM (Total|Used|Remain)\s*:\s*(\d+)\s*[kK]iB\s*$`)

// cmmUsed asks axcl-smi how much CMM memory is in use on the card, in MiB.
// ok is false when axcl-smi is missing or says nothing parseable.
func (m *Model) cmmUsed() (mib int64, ok bool) {
	if len(m.opts.SMI) == 0 {
		return 0, false
	}
	bin, err := exec.LookPath(m.opts.SMI[0])
	if err != nil {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	args := append(append([]string(nil), m.opts.SMI[1:]...), "info", "--cmm", "-d", strconv.Itoa(m.opts.Device))
	out, err := exec.CommandContext(ctx, bin, args...).Output()
	if err != nil {
		return 0, false
	}
	return parseSMIUsed(string(out))
}

// parseSMIUsed reads `axcl-smi info --cmm` output (axera.md §9).
func parseSMIUsed(out string) (mib int64, ok bool) {
	for _, m := range reSMICMM.FindAllStringSubmatch(out, -1) {
		if m[1] == "Used" {
			kib, err := strconv.ParseInt(m[2], 10, 64)
			if err != nil {
				return 0, false
			}
			return kib >> 10, true
		}
	}
	return 0, false
}

// Card is one accelerator as the default `axcl-smi` table lists it (two
// rows per card, axera.md §9). Figures the table leaves out ("--") are nil.
type Card struct {
	ID          int
	Chip        string   // AX650N on an AX-M1 / AX8850 card
	TempC       *float64 // chip junction temperature
	NPUPct      *float64 // NPU utilisation
	MemUsedMiB  *float64 // the card's own system memory
	MemTotalMiB *float64
	CMMUsedMiB  *float64 // the NPU's CMM pool, where models live
	CMMTotalMiB *float64
}

var (
	reSMICardRow  = regexp.MustCompile(`^\s*(\d+)\s+(\S+)`)            // "    0  AX650N   V3.6.5"
	reSMISensors  = regexp.MustCompile(`^\s*\S+\s+(\d+(?:\.\d+)?)C\b`) // "   --   54C   -- / --"
	reSMIPercents = regexp.MustCompile(`(\d+)%\s+(\d+)%`)              // "2%        0%": CPU, NPU
	reSMIMiB      = regexp.MustCompile(`(\d+)\s*MiB\s*/\s*(\d+)\s*MiB`)
)

// ParseSMITable reads the cards out of `axcl-smi`'s default table. The
// first row of a card starts with its number; the second with the fan
// column ("--") and the temperature.
func ParseSMITable(out string) []Card {
	var cards []Card
	var cur *Card
	for line := range strings.Lines(out) {
		cells := strings.Split(strings.TrimSpace(line), "|")
		if len(cells) != 5 { // "" first second third ""
			cur = nil
			continue
		}
		first, mid, last := cells[1], cells[2], cells[3]
		if m := reSMICardRow.FindStringSubmatch(first); m != nil {
			id, _ := strconv.Atoi(m[1])
			cards = append(cards, Card{ID: id, Chip: m[2]})
			cur = &cards[len(cards)-1]
			cur.MemUsedMiB, cur.MemTotalMiB = mibPair(last)
			continue
		}
		if cur == nil {
			continue
		}
		if m := reSMISensors.FindStringSubmatch(first); m != nil {
			cur.TempC = smiNum(m[1])
		}
		if m := reSMIPercents.FindStringSubmatch(mid); m != nil {
			cur.NPUPct = smiNum(m[2])
		}
		cur.CMMUsedMiB, cur.CMMTotalMiB = mibPair(last)
		cur = nil
	}
	return cards
}

func mibPair(cell string) (used, total *float64) {
	m := reSMIMiB.FindStringSubmatch(cell)
	if m == nil {
		return nil, nil
	}
	return smiNum(m[1]), smiNum(m[2])
}

func smiNum(s string) *float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return nil
	}
	return &v
}

// ErrNoSMI means the lane has no axcl-smi to ask (not installed, or
// disabled with an empty SMI command).
var ErrNoSMI = errors.New("axcl-smi not available")

// HasSMI reports whether the lane's axcl-smi command can be run.
func (e *Engine) HasSMI() bool {
	if len(e.opts.SMI) == 0 {
		return false
	}
	_, err := exec.LookPath(e.opts.SMI[0])
	return err == nil
}

// Card runs `axcl-smi` and returns the lane's card (Options.Device).
func (e *Engine) Card(ctx context.Context) (Card, error) {
	if len(e.opts.SMI) == 0 {
		return Card{}, ErrNoSMI
	}
	bin, err := exec.LookPath(e.opts.SMI[0])
	if err != nil {
		return Card{}, fmt.Errorf("%w: %v", ErrNoSMI, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, e.opts.SMI[1:]...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return Card{}, fmt.Errorf("%s: %v: %s (is the card seated and the AXCL driver loaded? try `axcl-smi` by hand)",
			bin, err, strings.TrimSpace(stderr.String()))
	}
	for _, c := range ParseSMITable(string(out)) {
		if c.ID == e.opts.Device {
			return c, nil
		}
	}
	return Card{}, fmt.Errorf("%s: card %d not in its table (%d lines; set axcl.device in the serve config to a listed card)",
		bin, e.opts.Device, strings.Count(string(out), "\n"))
}
