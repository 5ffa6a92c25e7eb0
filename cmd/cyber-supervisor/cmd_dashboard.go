package main

import (
	"context"
	"fmt"
	"log"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

func newDashboardCmd(a *app) *cobra.Command {
	listen := "127.0.0.1:0"
	cmd := &cobra.Command{
		Use:   "dashboard [--listen 127.0.0.1:PORT]",
		Short: "Serve the read-only dashboard to a browser on a loopback port",
		Long: `Serve the dashboard's pages (docs/dashboard.md) to a browser on a loopback
TCP port, with this user's rights, until interrupted (Ctrl-C). It prints
one URL carrying a random token: open it, and the browser keeps the token
as a cookie; any request without it is refused (forbidden). Only the hosts
127.0.0.1, [::1] and localhost with the port are answered, only GET and
HEAD, and --listen must be a loopback address: to reach a remote host's
dashboard, forward the port with ssh -L.

With a daemon on the home the pages are the daemon's; with none, they are
read from the home's store read-only (each request opens it and lets go
of it, so a daemon can start meanwhile, and is then asked).`,
		GroupID: groupJobs,
		Args:    noArgs("dashboard"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := loopbackListen(listen); err != nil {
				return err
			}
			return a.dashboard(cmd.Context(), listen)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", listen, "the loopback address and port to serve on (port 0: any free one)")
	return cmd
}

// dashboardURL is what the dashboard command prints (and its envelope's
// result).
type dashboardURL struct {
	URL    string `json:"url"`
	Listen string `json:"listen"`
	Home   string `json:"home"`
}

func (a *app) dashboard(ctx context.Context, listen string) error {
	home, err := supervisor.ResolveHome(a.home)
	if err != nil {
		return a.report("dashboard", nil, err, nil)
	}
	sock := supervisor.SocketPath(home)
	if probeDaemon(sock) != nil && bolt.Exists(supervisor.StorePath(home)) != nil {
		// Nothing to show: no daemon, and no store to read.
		return a.report("dashboard", nil, &noDaemonError{socket: sock, cli: a.homeCLI(home)}, nil)
	}
	token, err := newToken()
	if err != nil {
		return a.report("dashboard", nil, err, nil)
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return a.report("dashboard", nil, protocol.Errorf(protocol.CodeUnavailable, "dashboard: listen on %s: %v", listen, err), nil)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	backend := &dashboardBackend{socket: sock, proxy: daemonProxy(sock), reader: a.newHomeReader(home, a.hostCapabilities(ctx))}
	srv := &http.Server{
		Handler:           newDashboardGate(token, port, backend),
		ReadHeaderTimeout: 5 * time.Second,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
		// net/http's own complaints (a client that went) are not the
		// operator's business.
		ErrorLog: log.New(discardWriter{}, "", 0),
	}
	host, _, _ := net.SplitHostPort(listen)
	if host == "" {
		host = "127.0.0.1"
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	out := dashboardURL{URL: "http://" + addr + "/ui/?token=" + token, Listen: addr, Home: home}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	if a.json() {
		protocol.WriteEnvelope(a.stdout, "dashboard", out, nil)
	} else {
		fmt.Fprintln(a.stdout, out.URL)
		fmt.Fprintf(a.stderr, "the dashboard of %s on %s (stop with Ctrl-C)\n", home, addr)
	}
	select {
	case <-ctx.Done():
	case err := <-served:
		return a.report("dashboard", nil, protocol.Errorf(protocol.CodeInternalError, "dashboard: serve: %v", err), nil)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return nil
}

// dashboardBackend answers what the gate lets through: the daemon when
// one answers on the home's socket (asked at each request: a daemon may
// start or stop while the dashboard runs), else the home's store,
// read-only.
type dashboardBackend struct {
	socket string
	proxy  http.Handler
	reader *homeReader
}

func (b *dashboardBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if probeDaemon(b.socket) == nil {
		b.proxy.ServeHTTP(w, r)
		return
	}
	b.reader.ServeHTTP(w, r)
}

// discardWriter is io.Discard as a log's writer.
type discardWriter struct{}

func (discardWriter) Write(p []byte) (int, error) { return len(p), nil }
