package main

import (
	"github.com/edgectl/edgectl/internal/errkind"
)

// Exit codes are part of edgectl's interface: scripts and CI branch on
// them, so a code, once given a meaning, keeps it. Libraries mark their
// errors with an errkind; exitTable below is the one place that turns a
// kind into a code. docs/exit-codes.md lists the same table (a test holds
// the two together).
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitFixable  = 3
	exitBlocked  = 4
	exitTool     = 5
	exitNotFound = 10
	exitAuth     = 11
	exitOffline  = 12
	exitChecksum = 13
	exitDiskFull = 14
	exitNetwork  = 15
	exitBusy     = 16
	exitSIGINT   = 130 // 128 + SIGINT: signalCode in main.go
	exitSIGTERM  = 143 // 128 + SIGTERM
)

// exitRow is one exit code: the errkind that leads to it (None for codes
// no error kind reaches) and its meaning as docs/exit-codes.md words it.
type exitRow struct {
	code    int
	kind    errkind.Kind
	meaning string
}

var exitTable = []exitRow{
	{exitOK, errkind.None, "success (doctor: pass)"},
	{exitError, errkind.Input, "error: bad input or a failure edgectl explains (file, offset, fix)"},
	{exitUsage, errkind.Usage, "usage: wrong flags or arguments (unknown command or flag, a bad flag value, a missing or extra argument, a missing required flag), a bad value in a setting's environment variable (`EDGECTL_HOST`, `EDGECTL_KEEP_ALIVE`)"},
	{exitFixable, errkind.Fixable, "doctor: only fixable findings (an `edgectl patch`/`quant` command repairs them)"},
	{exitBlocked, errkind.Blocked, "blocked: the model cannot take this path (MoE, unreadable dtype, …)"},
	{exitTool, errkind.Tool, "an external tool failed (container runtime, pulsar2); every `pulsar2 build` failure except bad input"},
	{exitNotFound, errkind.NotFound, "not found: repository, revision or file (Hub, or OCI registry)"},
	{exitAuth, errkind.Auth, "gated or private: accept the licence on the Hub or set HF_TOKEN; registry auth refused"},
	{exitOffline, errkind.Offline, "offline (HF_HUB_OFFLINE=1) and not in the cache"},
	{exitChecksum, errkind.Checksum, "checksum mismatch: a download after a retry, or an OCI layer/file digest (`pull oci://`)"},
	{exitDiskFull, errkind.DiskFull, "disk full: no room for a download (checked before it starts) or an OCI pull"},
	{exitNetwork, errkind.Network, "network failure after all retries"},
	{exitBusy, errkind.Busy, "server busy or overloaded after retries"},
	{exitSIGINT, errkind.None, "interrupted by SIGINT (Ctrl-C)"},
	{exitSIGTERM, errkind.None, "terminated by SIGTERM"},
}

// codeOfKind is exitTable by kind.
var codeOfKind = func() map[errkind.Kind]int {
	m := map[errkind.Kind]int{}
	for _, r := range exitTable {
		if r.kind != errkind.None {
			m[r.kind] = r.code
		}
	}
	return m
}()

// exitCode is the code err exits with: its kind's, or 1 for an error
// without one (and 0 for none).
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	if code, ok := codeOfKind[errkind.Of(err)]; ok {
		return code
	}
	return exitError
}
