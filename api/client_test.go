package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The client's own rules, against small servers that answer what edgectl
// serve never does (an OpenAI envelope on /api, a proxy's page, an endless
// line); serve/client_test.go runs it against the real server.

func TestNewClientAddress(t *testing.T) {
	t.Setenv("EDGECTL_HOST", "")
	for host, want := range map[string]string{
		"":                       "http://127.0.0.1:11434",
		"box.lan":                "http://box.lan:11434",
		":8080":                  "http://127.0.0.1:8080",
		"https://box.lan:8443/":  "https://box.lan:8443",
		"http://192.168.1.5:99/": "http://192.168.1.5:99",
	} {
		c, err := NewClient(host, "")
		if err != nil || c.URL() != want {
			t.Errorf("NewClient(%q): %v, %v; want %s", host, c, err, want)
		}
	}
	t.Setenv("EDGECTL_HOST", "https://env.lan:1")
	if c, err := NewClient("", ""); err != nil || c.URL() != "https://env.lan:1" {
		t.Errorf("from EDGECTL_HOST: %v, %v", c, err)
	}
	if c, err := NewClient("arg.lan:2", ""); err != nil || c.URL() != "http://arg.lan:2" {
		t.Errorf("the argument does not win over EDGECTL_HOST: %v, %v", c, err)
	}
	t.Setenv("EDGECTL_HOST", "h:port")
	if _, err := NewClient("", ""); err == nil || !strings.Contains(err.Error(), "EDGECTL_HOST") {
		t.Errorf("bad EDGECTL_HOST: %v", err)
	}
	if _, err := NewClient("http://h/path", ""); err == nil || !strings.Contains(err.Error(), `"http://h/path"`) {
		t.Errorf("bad argument: %v", err)
	}
}

func TestClientErrorEnvelopes(t *testing.T) {
	answers := map[string]struct {
		code int
		body string
		want string
	}{
		"ollama": {404, `{"error":"model \"x\" not found"}`, `model "x" not found`},
		"openai": {401, `{"error":{"message":"missing or wrong API key","type":"authentication_error","param":null,"code":null}}`, "missing or wrong API key"},
		"proxy":  {502, "<html>Bad Gateway</html>\n", "<html>Bad Gateway</html>"},
		"empty":  {503, "", "Service Unavailable"},
		"other":  {400, `{"error":{"kind":"odd"}}`, `{"kind":"odd"}`},
		"long":   {500, strings.Repeat("x", 1000), strings.Repeat("x", 300) + "…"},
	}
	for name, a := range answers {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(a.code)
			fmt.Fprint(w, a.body)
		}))
		c, _ := NewClient(srv.URL, "")
		_, err := c.List(context.Background())
		srv.Close()
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != a.code || se.Message != a.want {
			t.Errorf("%s: %#v (%v); want %d %q", name, se, err, a.code, a.want)
		}
	}
}

func TestClientStreamStopsOnErrorLine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("Content-Type") != "application/json" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fmt.Fprintln(w, `{"model":"m","message":{"role":"assistant","content":"a"},"done":false}`)
		fmt.Fprintln(w, ``)
		fmt.Fprintln(w, `{"model":"m","message":{"role":"assistant","content":"b"},"done":false}`)
		fmt.Fprintln(w, `{"error":"engine failed at token 2"}`)
		fmt.Fprintln(w, `{"model":"m","message":{"role":"assistant","content":"never"},"done":true}`)
	}))
	defer srv.Close()
	c, _ := NewClient(srv.URL, "k")
	var got strings.Builder
	err := c.Chat(context.Background(), &ChatRequest{Model: "m"}, func(r ChatResponse) error {
		got.WriteString(r.Message.Content)
		return nil
	})
	var se *StatusError
	if !errors.As(err, &se) || se.StatusCode != 0 || se.Message != "engine failed at token 2" || got.String() != "ab" {
		t.Errorf("got %q, %v", got.String(), err)
	}
	// An error from the callback stops the stream and comes back as is.
	stop := errors.New("enough")
	n := 0
	err = c.Chat(context.Background(), &ChatRequest{Model: "m"}, func(ChatResponse) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("callback error: %v after %d lines", err, n)
	}
}

// A server that never ends a line costs the client at most maxLine.
func TestClientBoundsLines(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"response":"`))
		chunk := bytes.Repeat([]byte("x"), 1<<20)
		for range maxLine>>20 + 1 {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	c, _ := NewClient(srv.URL, "")
	err := c.Generate(context.Background(), &GenerateRequest{Model: "m"}, func(GenerateResponse) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "longer than 16 MiB") {
		t.Errorf("%v", err)
	}
}
