// Command fakeaxllm imitates the Axera vendor runtime for tests, speaking
// the `axllm run DIR` protocol on its terminal: init logs, a slow start,
// the "prompt >> " prompt, a ttft line, streamed text, the "hit eos" line,
// /reset and /q, and ^C to stop a running answer. Prompts containing HANG
// or CRASH make it hang mid-stream (ignoring SIGINT and SIGTERM) or die.
//
// With `--state DIR info --cmm -d N` it acts as axcl-smi, reporting the CMM
// memory that live fake runtimes (and leaked pools) hold.
//
// Behaviour is set by DIR/fake.json:
//
//	{"start_delay_ms": 300, "token_delay_ms": 5, "format": "time"|"bracket",
//	 "legacy_prompt": false, "state_dir": "/tmp/x", "cmm_mb": 1200}
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

type config struct {
	StartDelayMS int    `json:"start_delay_ms"`
	TokenDelayMS int    `json:"token_delay_ms"`
	Format       string `json:"format"`
	LegacyPrompt bool   `json:"legacy_prompt"`
	StateDir     string `json:"state_dir"`
	CMMMB        int    `json:"cmm_mb"`
}

var (
	cfg         config
	interrupted atomic.Bool
	line        = 100
)

func main() {
	args := os.Args[1:]
	if len(args) >= 2 && args[0] == "--state" {
		smi(args[1])
		return
	}
	if len(args) < 1 {
		fmt.Fprintln(os.Stderr, "usage: fakeaxllm run DIR")
		os.Exit(2)
	}
	dir := args[len(args)-1]
	if b, err := os.ReadFile(filepath.Join(dir, "fake.json")); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			fmt.Printf("parse error %v\n", err)
			os.Exit(1)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		logf("E", "Init", "load config.json failed: %v", err)
		os.Exit(1)
	}

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for s := range sigs {
			if s == syscall.SIGTERM {
				cleanup()
				os.Exit(0)
			}
			interrupted.Store(true)
		}
	}()

	logf("I", "Init", "LLM init start")
	time.Sleep(time.Duration(cfg.StartDelayMS) * time.Millisecond)
	if cfg.StateDir != "" {
		os.WriteFile(filepath.Join(cfg.StateDir, fmt.Sprintf("cmm-%d", os.Getpid())), []byte(strconv.Itoa(cfg.CMMMB)), 0o644)
	}
	logf("I", "Init", "init post axmodel ok,remain_cmm(%d MB)", 7040-cfg.CMMMB)
	fmt.Print("max_token_len : 2559\n")
	fmt.Print("kv_cache_size : 1024, kv_cache_num: 2559\n")
	logf("I", "Init", "LLM init ok")
	fmt.Print("Type \"q\" to exit, Ctrl+c to stop current running\n")
	prompt()

	turn := 0
	kv := 0
	in := bufio.NewReader(os.Stdin)
	for {
		s, err := in.ReadString('\n')
		if err != nil {
			cleanup()
			return
		}
		s = strings.TrimRight(s, "\r\n")
		switch strings.TrimSpace(s) {
		case "/q", "q", "/exit":
			cleanup()
			return
		case "/reset", "reset":
			turn, kv = 0, 0
			logf("I", "Reset", "reset ok")
			prompt()
			continue
		case "":
			prompt()
			continue
		}
		turn++
		interrupted.Store(false)
		logf("I", "Run", "ttft: %.2f ms", 12.34)
		var words []string
		switch {
		case strings.Contains(s, "LONG"):
			for i := 0; i < 400; i++ {
				words = append(words, fmt.Sprintf("w%d ", i))
			}
		default:
			words = strings.SplitAfter(fmt.Sprintf("You said: %s (turn %d). ☕", s, turn), " ")
		}
		n := 0
		for i, w := range words {
			if interrupted.Load() {
				break
			}
			if i == 2 && strings.Contains(s, "HANG") {
				signal.Ignore(syscall.SIGINT, syscall.SIGTERM)
				select {} // stuck in the driver
			}
			if i == 2 && strings.Contains(s, "CRASH") {
				if strings.Contains(s, "LEAK") && cfg.StateDir != "" {
					os.Rename(filepath.Join(cfg.StateDir, fmt.Sprintf("cmm-%d", os.Getpid())),
						filepath.Join(cfg.StateDir, fmt.Sprintf("leak-%d", os.Getpid())))
				}
				fmt.Print("\nSegmentation fault\n")
				os.Exit(139)
			}
			if r := []rune(w); strings.ContainsRune(w, '☕') && len(r) > 0 {
				// a multi-byte rune split across two writes
				b := []byte(w)
				os.Stdout.Write(b[:2])
				time.Sleep(2 * time.Millisecond)
				os.Stdout.Write(b[2:])
			} else {
				os.Stdout.WriteString(w)
			}
			n++
			time.Sleep(time.Duration(cfg.TokenDelayMS) * time.Millisecond)
		}
		kv += len(strings.Fields(s)) + n
		fmt.Print("\n")
		logf("N", "Run", "hit eos,avg %.2f token/s", 34.04)
		logf("I", "GetKVCache", "precompute_len:%d, remaining:%d", kv, 2559-kv)
		prompt()
	}
}

func prompt() {
	if cfg.LegacyPrompt {
		fmt.Print(">> ")
	} else {
		fmt.Print("prompt >> ")
	}
}

// logf prints a log line in the configured format (axera.md §6.2).
func logf(level, fn, format string, args ...any) {
	line++
	msg := fmt.Sprintf(format, args...)
	if cfg.Format == "time" {
		lv := map[string]string{"I": "INF", "N": "NTC", "E": "ERR"}[level]
		fmt.Printf("%s \x1b[32m%s\x1b[0m %s:%d | %s\n", time.Now().Format("15:04:05.000"), lv, fn, line, msg)
		return
	}
	fmt.Printf("[%s][%5s][%4d]: %s\n", level, fn, line, msg)
}

func cleanup() {
	if cfg.StateDir != "" {
		os.Remove(filepath.Join(cfg.StateDir, fmt.Sprintf("cmm-%d", os.Getpid())))
	}
}

// smi prints `axcl-smi info --cmm` for the fake card.
func smi(state string) {
	used := 0
	ents, _ := os.ReadDir(state)
	for _, e := range ents {
		name := e.Name()
		var pid int
		live := false
		if strings.HasPrefix(name, "cmm-") {
			pid, _ = strconv.Atoi(strings.TrimPrefix(name, "cmm-"))
			live = syscall.Kill(pid, 0) == nil
		}
		if live || strings.HasPrefix(name, "leak-") {
			b, _ := os.ReadFile(filepath.Join(state, name))
			mb, _ := strconv.Atoi(string(b))
			used += mb
		}
	}
	total := 7040 * 1024
	fmt.Printf("CMM Total : %d KiB\nCMM Used : %d KiB\nCMM Remain : %d kiB\n", total, used*1024, total-used*1024)
}
