// Command fakesmi stands in for `axcl-smi` in tests: one AX650N card whose
// temperature and memory come from a JSON file, so a test can heat the card
// up between two readings.
//
//	fakesmi [--card FILE] [info --cmm -d N]
//
// Without a subcommand it prints the default table (axera.md §9, the layout
// of axcl-smi V3.6); `info --cmm -d N` prints the CMM lines in KiB.
// FILE holds {"temp_c": 54, "cmm_used_mib": 18, "cmm_total_mib": 7040,
// "npu_pct": 0, "missing": false}; "missing": true answers like a host whose
// card is gone (exit status 1).
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

type card struct {
	TempC       int  `json:"temp_c"`
	CMMUsedMiB  int  `json:"cmm_used_mib"`
	CMMTotalMiB int  `json:"cmm_total_mib"`
	NPUPct      int  `json:"npu_pct"`
	Missing     bool `json:"missing"`
}

func main() {
	c := card{TempC: 54, CMMUsedMiB: 18, CMMTotalMiB: 7040}
	args := os.Args[1:]
	if len(args) >= 2 && args[0] == "--card" {
		if b, err := os.ReadFile(args[1]); err == nil {
			if err := json.Unmarshal(b, &c); err != nil {
				fmt.Fprintf(os.Stderr, "fakesmi: %s: %v\n", args[1], err)
				os.Exit(2)
			}
		}
		args = args[2:]
	}
	if c.Missing {
		fmt.Fprintln(os.Stderr, "[E][                            main][  92]: axcl init failed, ret = 0x8030010b")
		os.Exit(1)
	}
	switch strings.Join(args, " ") {
	case "":
		table(c)
	case "info --cmm -d 0":
		total := c.CMMTotalMiB * 1024
		fmt.Printf("CMM Total : %d KiB\nCMM Used : %d KiB\nCMM Remain : %d kiB\n", total, c.CMMUsedMiB*1024, total-c.CMMUsedMiB*1024)
	default:
		fmt.Fprintf(os.Stderr, "fakesmi: unsupported arguments %q\n", args)
		os.Exit(2)
	}
}

func table(c card) {
	bar := "+-----------------------------------------+--------------+---------------------------------------+"
	full := "+------------------------------------------------------------------------------------------------+"
	fmt.Println(full)
	fmt.Printf("| %-62s%32s |\n", "AXCL-SMI  V3.6.5_20250908154509", "Driver  V3.6.5_20250908154509")
	fmt.Println(bar)
	fmt.Println("| Card  Name                     Firmware | Bus-Id       |                          Memory-Usage |")
	fmt.Println("| Fan   Temp                Pwr:Usage/Cap | CPU      NPU |                             CMM-Usage |")
	fmt.Println("|=========================================+==============+=======================================|")
	fmt.Printf("|    0  AX650N                     V3.6.5 | 0001:11:00.0 | %37s |\n", fmt.Sprintf("%d MiB / %8d MiB", 148, 945))
	fmt.Printf("|   --  %3dC                      -- / -- | %-3s %8s | %37s |\n", c.TempC, "2%", fmt.Sprintf("%d%%", c.NPUPct),
		fmt.Sprintf("%d MiB / %8d MiB", c.CMMUsedMiB, c.CMMTotalMiB))
	fmt.Println(bar)
	fmt.Println()
	fmt.Println(full)
	fmt.Println("| Processes:                                                                                     |")
	fmt.Println("| Card      PID  Process Name                                                   NPU Memory Usage |")
	fmt.Println("|================================================================================================|")
	fmt.Println(full)
}
