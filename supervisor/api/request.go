package api

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// Requests are read as strictly as job specs: a query parameter the route
// does not know, one given twice, a malformed query string, a malformed
// job id or a body where none belongs is refused with invalid_job, never
// ignored, and a message echoes at most a short quoted prefix of what the
// client sent.

// query reads the request's query string: each parameter at most once and
// only those the route knows. Absent parameters read as "".
func query(r *http.Request, known ...string) (map[string]string, error) {
	out := make(map[string]string, len(known))
	if r.URL.RawQuery == "" {
		return out, nil
	}
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidJob, "malformed query string")
	}
	for k, vs := range vals {
		if !contains(known, k) {
			return nil, protocol.Errorf(protocol.CodeInvalidJob, "%s %s: unknown query parameter %s", methodOf(r), routeOf(r), protocol.QuotePrefix(k))
		}
		if len(vs) > 1 {
			return nil, protocol.Errorf(protocol.CodeInvalidJob, "query parameter %s given %d times", k, len(vs))
		}
		out[k] = vs[0]
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, k := range list {
		if k == s {
			return true
		}
	}
	return false
}

// jobID is the {id} of the route, which must be a valid job id.
func jobID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if !protocol.ValidName(id) {
		return "", protocol.Errorf(protocol.CodeInvalidJob, "job id %s: want 1-%d of [A-Za-z0-9._-], not starting with a dot",
			protocol.QuotePrefix(id), protocol.MaxTextBytes)
	}
	return id, nil
}

// routeOf names the request's route for messages and logs: its pattern
// when it matched one, otherwise a short prefix of its path.
func routeOf(r *http.Request) string {
	if p := r.Pattern; p != "" {
		if i := strings.IndexByte(p, ' '); i >= 0 {
			p = p[i+1:]
		}
		return p
	}
	return protocol.QuotePrefix(r.URL.Path)
}

// methodOf names the request's method for messages: net/http admits only
// token characters there, but not only short ones.
func methodOf(r *http.Request) string {
	if len(r.Method) <= 16 {
		return r.Method
	}
	return protocol.QuotePrefix(r.Method)
}
