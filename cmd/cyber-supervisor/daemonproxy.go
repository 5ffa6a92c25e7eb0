package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// daemonProxy passes requests on to the daemon's socket as they are
// (path, query, method, body) and its answers back, streaming (an event
// stream or a long poll answers as it goes).
func daemonProxy(socket string) *httputil.ReverseProxy {
	target := &url.URL{Scheme: "http", Host: "supervisor"}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = target.Host
		},
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", socket)
			},
			// A connection kept for the next page is let go of before
			// the daemon's own idle bound would close it.
			IdleConnTimeout: 30 * time.Second,
		},
		FlushInterval: -1,
		// The daemon went between the probe and the request.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeReaderError(w, 0, protocol.Errorf(protocol.CodeUnavailable, "the daemon on %s did not answer: %s", socket, protocol.SafeMessage(err.Error())))
		},
	}
}
