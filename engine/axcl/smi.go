package axcl

import (
	"context"
	"os/exec"
	"regexp"
	"strconv"
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
