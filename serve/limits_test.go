package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveReal runs s.Serve on a loopback listener, as `edgectl serve` does
// (the http.Server's own timeouts included), and returns its address.
func serveReal(t *testing.T, opts Options) (*Server, string) {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ts := start(t, opts) // engines and cleanup
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ts.Server.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ts.Server, ln.Addr().String()
}

// rawRequest writes head (and body) on a new connection and returns what
// the server answers until it closes the connection or 5 s pass.
func rawRequest(t *testing.T, addr, head, body string) (status string, rest string, closed bool) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, head+"\r\n"+body)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	status, _ = br.ReadString('\n')
	b, err := io.ReadAll(br)
	return strings.TrimSpace(status), string(b), err == nil
}

func TestBodyLimit413InTheRoutesDialect(t *testing.T) {
	root := t.TempDir()
	tinyDir(t, root, "tinystories")
	_, addr := serveReal(t, Options{ModelDirs: []string{root}})
	// The default limit, 8 MiB, announced by Content-Length: refused
	// before a byte of the body is read.
	for path, want := range map[string]string{
		"/v1/chat/completions": `{"error":{"message":"request body of 9437184 bytes is over the limit of 8388608 bytes (8 MiB)`,
		"/api/generate":        `{"error":"request body of 9437184 bytes is over the limit of 8388608 bytes (8 MiB)`,
	} {
		status, rest, closed := rawRequest(t, addr, "POST "+path+" HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 9437184\r\n", "{")
		if status != "HTTP/1.1 413 Request Entity Too Large" || !strings.Contains(rest, want) || !closed {
			t.Errorf("%s: %s %s (closed %v)", path, status, rest, closed)
		}
	}

	// A configured limit, and a chunked body (no length) that exceeds it.
	root2 := t.TempDir()
	tinyDir(t, root2, "tinystories")
	ts := start(t, Options{ModelDirs: []string{root2}, MaxBody: 1000})
	big := `{"model":"tinystories","prompt":"` + strings.Repeat("a", 2000) + `"}`
	resp, err := http.Post(ts.URL+"/api/generate", "application/json", io.MultiReader(strings.NewReader(big))) // no length: chunked
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), `"error":"request body is over the limit of 1000 bytes`) {
		t.Errorf("chunked over the limit: %d %s", resp.StatusCode, b)
	}
	code, _, out := post(t, ts.URL+"/v1/completions", `{"model":"tinystories","prompt":"Once","max_tokens":2}`)
	if code != 200 {
		t.Errorf("under the limit: %d %s", code, out)
	}
	if got := metric(t, ts, `edgectl_requests_total{route="/api/generate",model="unknown",code="413"}`); got != "1" {
		t.Errorf("413 counted %s", got)
	}
}

// A client sending its body at 1 byte every 100 ms is cut off after the
// body timeout (408, connection closed); a streamed answer that outlasts
// the timeout is not.
func TestSlowBodyTimesOutButStreamsDoNot(t *testing.T) {
	root := t.TempDir()
	axDir(t, root, "slow", `{"token_delay_ms":60}`, 1)
	_, addr := serveReal(t, Options{ModelDirs: []string{root}, BodyTimeout: 300 * time.Millisecond})

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	body := `{"model":"slow","messages":[{"role":"user","content":"hi"}]}`
	fmt.Fprintf(c, "POST /api/chat HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for i := 0; i < len(body); i++ {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if _, err := c.Write([]byte{body[i]}); err != nil {
				return
			}
		}
	}()
	t0 := time.Now()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	br := bufio.NewReader(c)
	status, _ := br.ReadString('\n')
	rest, err := io.ReadAll(br)
	// The server closes the connection after the 408: EOF, or a reset
	// when the client's next byte arrives first — never our 5 s timeout.
	var ne net.Error
	if !strings.HasPrefix(status, "HTTP/1.1 408") || !strings.Contains(string(rest), "request body not received within 300ms") ||
		errors.As(err, &ne) && ne.Timeout() {
		t.Errorf("slow body: %q %s (%v)", status, rest, err)
	}
	if el := time.Since(t0); el > 2*time.Second {
		t.Errorf("slow body cut after %v", el)
	}

	// A stream of ~10 tokens at 60 ms each runs past the 300 ms body timeout.
	t0 = time.Now()
	resp, err := http.Post("http://"+addr+"/api/chat", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var last map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		last = nil
		if err := json.Unmarshal(sc.Bytes(), &last); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
	}
	if el := time.Since(t0); last["done"] != true || el < 300*time.Millisecond {
		t.Errorf("stream ended after %v with %v", el, last)
	}
}

// Numbers out of range are a 400 naming the field and its range, in each
// route's dialect.
func TestOutOfRangeNumbers(t *testing.T) {
	ts := tinyServer(t)
	msgs := `"model":"tinystories","messages":[{"role":"user","content":"a"}]`
	for _, tc := range []struct{ path, body, param, want string }{
		{"/v1/chat/completions", `{` + msgs + `,"max_tokens":9223372036854775808}`, "max_tokens", `field \"max_tokens\" = 9223372036854775808 is out of range: want an integer from 0 to 2147483647`},
		{"/v1/chat/completions", `{` + msgs + `,"max_tokens":-3}`, "max_tokens", `field \"max_tokens\" = -3 is out of range`},
		{"/v1/chat/completions", `{` + msgs + `,"max_completion_tokens":-3}`, "max_completion_tokens", `field \"max_completion_tokens\" = -3 is out of range`},
		{"/v1/chat/completions", `{` + msgs + `,"temperature":1e999}`, "temperature", `field \"temperature\" = 1e999 is out of range: want a number from 0 to 2`},
		{"/v1/chat/completions", `{` + msgs + `,"top_p":1.5}`, "top_p", `field \"top_p\" = 1.5 is out of range: want a number from 0 to 1`},
		{"/v1/completions", `{"model":"tinystories","prompt":"a","top_k":-1}`, "top_k", `field \"top_k\" = -1 is out of range`},
		{"/api/generate", `{"model":"tinystories","prompt":"a","options":{"num_predict":9223372036854775808}}`, "", `field \"options.num_predict\" = 9223372036854775808 is out of range: want an integer from -2 to 2147483647`},
		{"/api/chat", `{` + msgs + `,"options":{"temperature":-1}}`, "", `field \"options.temperature\" = -1 is out of range: want a number ≥ 0`},
		{"/api/chat", `{` + msgs + `,"options":{"repeat_last_n":-2}}`, "", `field \"options.repeat_last_n\" = -2 is out of range: want an integer from -1`},
	} {
		code, _, b := post(t, ts.URL+tc.path, tc.body)
		if code != 400 || !strings.Contains(string(b), tc.want) {
			t.Errorf("%s %s: %d %s\nwant %s", tc.path, tc.body, code, b, tc.want)
		}
		if tc.param != "" && !strings.Contains(string(b), `"param":"`+tc.param+`"`) {
			t.Errorf("%s: param missing: %s", tc.body, b)
		}
	}
	// Ollama's special values still work: -1 (whole context) and 0 (off)
	// for repeat_last_n with a penalty, -1 and -2 for num_predict.
	for _, o := range []string{`"repeat_last_n":-1,"repeat_penalty":1.3,"num_predict":3`, `"repeat_last_n":0,"repeat_penalty":1.3,"num_predict":3`, `"num_predict":-2,"stop":["."]`} {
		if code, _, b := post(t, ts.URL+"/api/generate", `{"model":"tinystories","prompt":"Once","stream":false,"options":{`+o+`}}`); code != 200 {
			t.Errorf("options %s: %d %s", o, code, b)
		}
	}
}
