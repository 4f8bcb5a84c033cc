package axcl

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgectl/edgectl/internal/testbin"
)

const fakeSMI = "github.com/edgectl/edgectl/engine/axcl/testdata/fakesmi"

// The table as axcl-smi V3.6 prints it on a Raspberry Pi with an AX-M1
// card (the Radxa and AXERA docs show the same layout), plus a second card.
const smiTable = `+------------------------------------------------------------------------------------------------+
| AXCL-SMI  V3.6.5_20250908154509                                  Driver  V3.6.5_20250908154509 |
+-----------------------------------------+--------------+---------------------------------------+
| Card  Name                     Firmware | Bus-Id       |                          Memory-Usage |
| Fan   Temp                Pwr:Usage/Cap | CPU      NPU |                             CMM-Usage |
|=========================================+==============+=======================================|
|    0  AX650N                     V3.6.5 | 0001:11:00.0 |                148 MiB /      945 MiB |
|   --   54C                      -- / -- | 2%        0% |                 18 MiB /     7040 MiB |
+-----------------------------------------+--------------+---------------------------------------+
|    1  AX650N                     V3.6.5 | 0002:11:00.0 |                150 MiB /      945 MiB |
|   --   81C                      -- / -- | 9%       97% |               1218 MiB /     7040 MiB |
+-----------------------------------------+--------------+---------------------------------------+

+------------------------------------------------------------------------------------------------+
| Processes:                                                                                     |
| Card      PID  Process Name                                                   NPU Memory Usage |
|================================================================================================|
|    1   147201  /usr/bin/axllm                                                        1200 MiB |
+------------------------------------------------------------------------------------------------+
`

func TestParseSMITable(t *testing.T) {
	cards := ParseSMITable(smiTable)
	if len(cards) != 2 {
		t.Fatalf("%d cards, want 2: %+v", len(cards), cards)
	}
	c := cards[1]
	if c.ID != 1 || c.Chip != "AX650N" || *c.TempC != 81 || *c.NPUPct != 97 || *c.CMMUsedMiB != 1218 || *c.CMMTotalMiB != 7040 ||
		*c.MemUsedMiB != 150 || *c.MemTotalMiB != 945 {
		t.Errorf("card 1 %+v", c)
	}
	if *cards[0].TempC != 54 || *cards[0].CMMUsedMiB != 18 {
		t.Errorf("card 0 %+v", cards[0])
	}
	// The process table's "1 147201 ..." row is not a card.
	if got := ParseSMITable("| Processes: |\n|    1   147201  /usr/bin/axllm    1200 MiB |\n"); len(got) != 0 {
		t.Errorf("process rows read as cards: %+v", got)
	}
}

// Card runs the (fake) axcl-smi and picks the configured card; a host
// whose card is gone gives an error that says what to check.
func TestCardFromFakeSMI(t *testing.T) {
	bin := testbin.Build(t, fakeSMI, "axcl-smi")
	state := filepath.Join(t.TempDir(), "card.json")
	os.WriteFile(state, []byte(`{"temp_c": 77, "cmm_used_mib": 1218, "cmm_total_mib": 7040, "npu_pct": 40}`), 0o644)
	e := New(Options{SMI: []string{bin, "--card", state}})
	if !e.HasSMI() {
		t.Fatal("HasSMI false for a built program")
	}
	c, err := e.Card(context.Background())
	if err != nil || *c.TempC != 77 || *c.CMMUsedMiB != 1218 || *c.CMMTotalMiB != 7040 || *c.NPUPct != 40 {
		t.Fatalf("%+v %v", c, err)
	}
	// The CMM check the lane runs around loads reads the same fake.
	m := &Model{opts: e.opts}
	if used, ok := m.cmmUsed(); !ok || used != 1218 {
		t.Errorf("cmmUsed %d %v", used, ok)
	}
	if _, err := New(Options{SMI: []string{bin, "--card", state}, Device: 3}).Card(context.Background()); err == nil {
		t.Error("card 3 found on a one-card host")
	}
	os.WriteFile(state, []byte(`{"missing": true}`), 0o644)
	if _, err := e.Card(context.Background()); err == nil || errors.Is(err, ErrNoSMI) {
		t.Errorf("missing card: %v", err)
	}
	if _, err := New(Options{SMI: []string{}}).Card(context.Background()); !errors.Is(err, ErrNoSMI) {
		t.Errorf("disabled axcl-smi: %v", err)
	}
}
