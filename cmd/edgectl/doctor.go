package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/edgectl/edgectl/doctor"
	"github.com/edgectl/edgectl/engine/axcl"
	"github.com/edgectl/edgectl/internal/cli"
	"github.com/edgectl/edgectl/serve"
)

func init() { register(newDoctorCmd) }

type doctorOptions struct {
	Dir        string
	Target     string
	KVCacheLen int
	Log        string
	// --device: the board's checks instead of a checkpoint's.
	Device     bool
	Config     string // serve's config: axcl.smi, axcl.device, hot_temp_c
	Card       int
	DeviceRoot string // hidden: the board's root, for tests
}

func newDoctorCmd(io *cli.IO) *cobra.Command {
	return newDoctorCmdWith(io, runDoctor)
}

func newDoctorCmdWith(io *cli.IO, runF func(context.Context, *cli.IO, *doctorOptions) error) *cobra.Command {
	o := &doctorOptions{}
	cmd := &cobra.Command{
		Use:   "doctor DIR | doctor --device",
		Short: "Check a checkpoint against the NPU toolchain and say how to fix what fails",
		Long: `Checks a Hugging Face checkpoint for the faults that make the Axera toolchain
fail (eos_token_id arrays, 0-byte configs, KV lengths not of the form 128·k−1,
missing norm tensors, unquantized weights, MoE, dtypes the compiler rejects, …).
Each finding has a severity, its evidence and the command that fixes it.
A compiled ax-llm directory (pulsar2 output) is checked against what axllm
loads instead; --log FILE explains a runtime failure such as 0x8030070c.
With --device (no DIR) it checks the board instead: the AXCL driver,
axcl-smi, free CMM, card temperature, runtimes a killed server left and
stale lock files (--config: the serve config's axcl.smi and axcl.device).

Exit codes: 0 pass, 3 only fixable findings, 4 blocking findings, 1 error.`,
		Example: `  edgectl doctor ./Qwen3-1.7B
  edgectl doctor ./gemma-3-1b-it --kv-cache-len 2048 --json
  edgectl doctor --device --config serve.json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.Device {
				return cobra.NoArgs(cmd, args)
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				o.Dir = args[0]
			}
			return runF(cmd.Context(), io, o)
		},
	}
	cmd.Flags().StringVar(&o.Target, "target", "ax650", "target NPU: ax650, also as AX650N, AX650A, AX8850, AX-M1 or LLM-8850 (any case)")
	cmd.Flags().IntVar(&o.KVCacheLen, "kv-cache-len", 0, "KV-cache length you plan to build with")
	cmd.Flags().StringVar(&o.Log, "log", "", "a compiled directory's runtime log (axllm, main_*) to explain (e.g. 0x8030070c)")
	cmd.Flags().BoolVar(&o.Device, "device", false, "check the board (driver, axcl-smi, CMM, temperature, leftovers) instead of a checkpoint")
	cmd.Flags().StringVar(&o.Config, "config", "", "with --device: serve's config file (axcl.smi, axcl.device, hot_temp_c)")
	cmd.Flags().IntVar(&o.Card, "card", -1, "with --device: the card to check (default: axcl.device from --config, else 0)")
	cmd.Flags().StringVar(&o.DeviceRoot, "device-root", "/", "with --device: the board's filesystem root")
	_ = cmd.Flags().MarkHidden("device-root")
	return cmd
}

func runDoctor(ctx context.Context, io *cli.IO, o *doctorOptions) error {
	var r *doctor.Report
	var err error
	if o.Device {
		r, err = doctorDevice(ctx, o)
	} else {
		r, err = doctor.Check(o.Dir, doctor.Options{Target: o.Target, KVCacheLen: o.KVCacheLen, Log: o.Log})
	}
	if err != nil {
		return err
	}
	if io.JSON {
		if err := io.WriteJSON(r); err != nil {
			return err
		}
	} else {
		verdictColor := map[string]string{"pass": cli.Green, "fixable": cli.Yellow, "blocked": cli.Red}[r.Verdict]
		io.Printf("%s (target %s): %s\n", r.Path, r.Target, io.ColorOut(verdictColor, r.Verdict))
		for _, f := range r.Findings {
			io.Printf("  %s %-20s %s\n", io.ColorOut(severityColor[f.Severity], fmt.Sprintf("%-9s", f.Severity)), f.ID, f.Message)
			io.Printf("  %-9s %-20s evidence: %s\n", "", "", f.Evidence)
			if f.Fix != "" {
				io.Printf("  %-9s %-20s fix: %s\n", "", "", f.Fix)
			}
		}
	}
	if err := r.Err(); err != nil {
		return &silentError{err: err} // the report above explains the verdict
	}
	return nil
}

// doctorDevice runs the vendor lane's board checks (engine/axcl) with the
// axcl settings serve would use (its --config), so doctor asks the same
// axcl-smi about the same card, and reports them as doctor does.
func doctorDevice(ctx context.Context, o *doctorOptions) (*doctor.Report, error) {
	if o.Log != "" || o.KVCacheLen != 0 {
		return nil, usagef("--log and --kv-cache-len check a model directory; drop them with --device")
	}
	lane := axcl.Options{Device: max(o.Card, 0), Logf: func(string, ...any) {}}
	board := axcl.BoardOptions{Root: o.DeviceRoot}
	if o.Config != "" {
		fc, err := serve.ReadConfig(o.Config)
		if err != nil {
			return nil, err
		}
		lane.SMI = fc.Axcl.SMI
		if o.Card < 0 {
			lane.Device = fc.Axcl.Device
		}
		if fc.HotTempC != nil {
			board.HotC = *fc.HotTempC
		}
	}
	r := &doctor.Report{Path: fmt.Sprintf("card %d", lane.Device), Target: "ax650", Kind: "device"}
	for _, f := range axcl.New(lane).CheckBoard(ctx, board) {
		r.Findings = append(r.Findings, doctor.Finding{ID: f.ID, Severity: doctor.Severity(f.Severity), Message: f.Message, Evidence: f.Evidence, Fix: f.Fix})
	}
	r.Finish()
	return r, nil
}

var severityColor = map[doctor.Severity]string{doctor.Info: cli.Blue, doctor.Warning: cli.Yellow,
	doctor.Fixable: cli.Yellow, doctor.Quantize: cli.Yellow, doctor.Blocking: cli.Red}
