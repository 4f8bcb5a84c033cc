package serve

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/edgectl/edgectl/api"
)

// Unknown routes and wrong methods are answered in the shape of the API
// the path belongs to, so that clients show the message rather than
// Go's plain "404 page not found" (which clients print as "404 404 page
// not found", and LangChain takes for a missing model): Anthropic's error
// under /v1/messages, OpenAI's under /v1, Ollama's {"error": …} under
// /api and elsewhere. A path that exists for other methods is a 405
// with Allow.

// probeMethods are the methods a path is tried with to build Allow.
var probeMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

// routed serves requests the mux has a route for and answers the others
// with 404 or 405 in the path's dialect.
func (s *Server) routed(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, pattern := mux.Handler(r); pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		var allow []string
		for _, m := range probeMethods {
			rr := *r
			rr.Method = m
			if _, pattern := mux.Handler(&rr); pattern != "" {
				allow = append(allow, m)
			}
		}
		what := r.Method + " " + r.URL.Path
		if len(allow) > 0 {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeRouteError(w, r, http.StatusMethodNotAllowed, fmt.Sprintf("%s: method not allowed; this route takes %s", what, strings.Join(allow, ", ")))
			return
		}
		writeRouteError(w, r, http.StatusNotFound, fmt.Sprintf("%s: no such route (edgectl serves the OpenAI API under /v1, Anthropic's /v1/messages, and Ollama's under /api)", what))
	})
}

// writeRouteError answers a 404 or 405 in the dialect of the path: OpenAI
// calls a route it does not have an invalid_request_error with code
// unknown_url (not not_found_error, which is about a model).
func writeRouteError(w http.ResponseWriter, r *http.Request, code int, msg string) {
	p := r.URL.Path
	switch {
	case isAnthropicPath(p):
		writeAnthropicError(w, code, msg)
	case p == "/v1" || strings.HasPrefix(p, "/v1/"):
		c := "unknown_url"
		if code == http.StatusMethodNotAllowed {
			c = "method_not_allowed"
		}
		writeJSON(w, code, api.ErrorEnvelope{Error: api.ErrorBody{Message: msg, Type: api.ErrTypeInvalidRequest, Code: &c}})
	default:
		writeOllamaError(w, code, msg)
	}
}
