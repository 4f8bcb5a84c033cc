// Command fakeaxllm imitates the Axera vendor runtime for tests, speaking
// the `axllm run DIR` protocol on its terminal: init logs, a slow start,
// the "prompt >> " prompt, a ttft line, streamed text, the "hit eos" line,
// /reset and /q, and ^C to stop a running answer. Prompts containing HANG
// or CRASH make it hang mid-stream (ignoring SIGINT and SIGTERM) or die.
//
// Like the real runtime it keeps the conversation in its KV cache until
// /reset (precompute_len grows turn by turn), prefixes the system_prompt of
// its config.json (or --system_prompt, as legacy main_* builds take it), and
// loads the tokenizer file config.json names in url_tokenizer_model
// (tokenizer.go), failing with the vendor's message when it cannot. A prompt
// containing HISTORY is answered with the system prompt and every user line
// the cache holds, decoded through that tokenizer, so tests can see what
// the runtime remembers.
//
// It reads post_config.json as LLMPostprocess::load_config does: the file
// config.json's post_config_path names (default post_config.json, relative
// to DIR) or --post_config_path for legacy builds; all nine keys are
// required ("type must be boolean, but is null"), a missing file is a
// warning. It logs the settings it loaded ("load config: {...}") and
// answers a prompt containing SAMPLING with them.
//
// With `--state DIR info --cmm -d N` it acts as axcl-smi, reporting the CMM
// memory that live fake runtimes (and leaked pools) hold.
//
// Behaviour is set by DIR/fake.json:
//
//	{"start_delay_ms": 300, "token_delay_ms": 5, "format": "time"|"bracket",
//	 "legacy_prompt": false, "state_dir": "/tmp/x", "cmm_mb": 1200,
//	 "max_token_len": 2559}
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
	MaxTokenLen  int    `json:"max_token_len"`
}

// modelConfig is the part of the ax-llm config.json the fake reads.
type modelConfig struct {
	SystemPrompt      string `json:"system_prompt"`
	URLTokenizerModel string `json:"url_tokenizer_model"`
	PostConfigPath    string `json:"post_config_path"`
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
	system, hasSystemFlag, postPath := "", false, ""
	for i := 0; i+1 < len(args); i++ {
		switch args[i] {
		case "--system_prompt":
			system, hasSystemFlag = args[i+1], true
		case "--post_config_path":
			postPath = args[i+1]
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "fake.json")); err == nil {
		if err := json.Unmarshal(b, &cfg); err != nil {
			fmt.Printf("parse error %v\n", err)
			os.Exit(1)
		}
	}
	cb, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		logf("E", "Init", "load config.json failed: %v", err)
		os.Exit(1)
	}
	var mc modelConfig
	if err := json.Unmarshal(cb, &mc); err != nil {
		fmt.Printf("parse error %v\n", err)
		os.Exit(1)
	}
	if !hasSystemFlag {
		system = mc.SystemPrompt
	}
	if cfg.MaxTokenLen == 0 {
		cfg.MaxTokenLen = 2559
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
	tok, err := loadTokenizer(filepath.Join(dir, mc.URLTokenizerModel))
	if err != nil {
		fmt.Println(err)
		logf("E", "Init", "tokenizer init failed")
		os.Exit(1)
	}
	if postPath == "" {
		postPath = mc.PostConfigPath
		if postPath == "" {
			postPath = "post_config.json"
		}
		if !filepath.IsAbs(postPath) {
			postPath = filepath.Join(dir, postPath)
		}
	}
	time.Sleep(time.Duration(cfg.StartDelayMS) * time.Millisecond)
	if cfg.StateDir != "" {
		os.WriteFile(filepath.Join(cfg.StateDir, fmt.Sprintf("cmm-%d", os.Getpid())), []byte(strconv.Itoa(cfg.CMMMB)), 0o644)
	}
	logf("I", "Init", "init post axmodel ok,remain_cmm(%d MB)", 7040-cfg.CMMMB)
	fmt.Printf("max_token_len : %d\n", cfg.MaxTokenLen)
	fmt.Printf("kv_cache_size : 1024, kv_cache_num: %d\n", cfg.MaxTokenLen)
	sampling := loadPostConfig(postPath) // last step of init, as in LLM.hpp
	logf("I", "Init", "LLM init ok")
	fmt.Print("Type \"q\" to exit, Ctrl+c to stop current running\n")
	prompt()

	// The KV cache: the system prompt is prefilled at init and after each
	// reset; every turn adds its prompt and answer.
	sysTokens := len(tok.encode(system))
	turn := 0
	kv := sysTokens
	var held []string // user lines in the cache, as the tokenizer decodes them
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
			turn, kv, held = 0, sysTokens, nil
			logf("I", "Reset", "reset ok")
			prompt()
			continue
		case "":
			prompt()
			continue
		}
		turn++
		ids := tok.encode(s)
		seen := tok.decode(ids)
		held = append(held, seen)
		interrupted.Store(false)
		logf("I", "Run", "ttft: %.2f ms", 12.34)
		var words []string
		switch {
		case strings.Contains(s, "LONG"):
			for i := 0; i < 400; i++ {
				words = append(words, fmt.Sprintf("w%d ", i))
			}
		case strings.Contains(s, "SAMPLING"):
			words = strings.SplitAfter("sampling="+sampling, " ")
		case strings.Contains(s, "HISTORY"):
			words = strings.SplitAfter(fmt.Sprintf("system=[%s] history=[%s] (turn %d, kv %d).", system, strings.Join(held, " | "), turn, kv), " ")
		default:
			words = strings.SplitAfter(fmt.Sprintf("You said: %s (turn %d). ☕", seen, turn), " ")
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
		kv += len(ids) + len(tok.encode(strings.Join(words[:n], "")))
		fmt.Print("\n")
		logf("N", "Run", "hit eos,avg %.2f token/s", 34.04)
		logf("I", "GetKVCache", "precompute_len:%d, remaining:%d", kv, cfg.MaxTokenLen-kv)
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
		lv := map[string]string{"I": "INF", "N": "NTC", "W": "WRN", "E": "ERR"}[level]
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

// postKeys are the keys LLMPostprocess::load_config reads, all required.
var postKeys = []string{"enable_temperature", "temperature", "enable_repetition_penalty", "repetition_penalty",
	"penalty_window", "enable_top_p_sampling", "top_p", "enable_top_k_sampling", "top_k"}

// loadPostConfig reads path as the runtime does and returns the settings
// it applies, compact JSON in load_config's key order.
func loadPostConfig(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		logf("E", "load_config", "config file(%s) open failed", path)
		logf("W", "Init", "load postprocess config(%s) failed", path)
		return "greedy"
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		fmt.Printf("terminate called after throwing an instance of 'nlohmann::json_abi_v3_11_2::detail::parse_error'\n  what():  [json.exception.parse_error.101] parse error: %v\n", err)
		os.Exit(134)
	}
	parts := make([]string, 0, len(postKeys))
	for _, k := range postKeys {
		v, ok := raw[k]
		if !ok || string(v) == "null" {
			fmt.Printf("terminate called after throwing an instance of 'nlohmann::json_abi_v3_11_2::detail::type_error'\n  what():  [json.exception.type_error.302] type must be boolean, but is null\n")
			os.Exit(134)
		}
		parts = append(parts, fmt.Sprintf("%q:%s", k, strings.Join(strings.Fields(string(v)), "")))
	}
	applied := "{" + strings.Join(parts, ",") + "}"
	logf("I", "load_config", "load config: %s", applied)
	return applied
}
