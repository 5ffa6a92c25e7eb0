package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// The read commands (status, list, result, events, capabilities, the
// fencing list and show commands, dashboard) ask the daemon when one
// owns the home; on a home no daemon owns (a one-shot run leaves one)
// they read its store read-only, through the API's own handlers served
// in this process (homeReader): the same JSON, errors and code paths as
// a daemon's answers. Writes keep their "no daemon" error.

// dialReader is dialDaemon for a command that only reads: with no daemon
// on a home that has a store, a daemon-like connection whose requests
// the home's store answers read-only in process. A home with no store
// (nothing to read) or whose jobs are on a shared store (etcd: only a
// daemon of the cluster reads them) keeps the no-daemon error.
func (a *app) dialReader() (*daemon, error) {
	return a.dialReaderWith(nil)
}

// dialReaderWith is dialReader whose daemon-free answers report caps()
// (asked once, at the first read) as what the host enforces: the
// capabilities command and the dashboard's overview (nil: nothing).
func (a *app) dialReaderWith(caps func() launch.Capabilities) (*daemon, error) {
	dm, err := a.dialDaemon()
	var nde *noDaemonError
	if err == nil || !errors.As(err, &nde) {
		return dm, err
	}
	home, herr := supervisor.ResolveHome(a.home)
	if herr != nil {
		return nil, herr
	}
	if bolt.Exists(supervisor.StorePath(home)) != nil {
		return nil, err
	}
	if _, serr := os.Stat(supervisor.SharedMarkPath(home)); serr == nil {
		return nil, err
	}
	r := a.newHomeReader(home, caps)
	r.keep = true
	return &daemon{Client: api.NewHandlerClient(r), home: home, socket: nde.socket, cli: a.homeCLI(home), readOnly: true, release: r.close}, nil
}

// newHomeReader reads home read-only; caps as dialReaderWith's.
func (a *app) newHomeReader(home string, caps func() launch.Capabilities) *homeReader {
	return &homeReader{home: home, caps: caps, version: versionString(), log: a.logger("warn"), dial: a.dialDaemon}
}

// homeReader answers API requests from a home's store, read-only: the
// store is opened under its shared lock, the request answered by the
// API's handlers over a read-only supervisor, and the store closed
// again after the request (or, keep, after the command's reads), so
// that a daemon starting meanwhile waits for one request or command.
// Only GET and HEAD are answered; a store a daemon took meanwhile is
// answered by the daemon (the request is passed to it).
type homeReader struct {
	home    string
	caps    func() launch.Capabilities
	once    sync.Once
	found   launch.Capabilities
	version string
	log     *slog.Logger
	dial    func() (*daemon, error)
	// keep: the store is opened at the first request and held until
	// close (a command's reads: one open, whatever the pages), instead
	// of once per request (the dashboard, the watches' polls). An open
	// checks every page of the file: ~1 s at 100,000 jobs.
	keep   bool
	mu     sync.Mutex
	held   *api.InProcess
	closer func()
}

// readLockWait is how long a read waits for the store's shared lock: a
// daemon holds the lock exclusively from its start; a start takes it
// within this, and then the read goes to the daemon's socket.
const readLockWait = 2 * time.Second

func (h *homeReader) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeReaderError(w, http.StatusMethodNotAllowed, protocol.Errorf(protocol.CodeUnavailable,
			"no daemon owns %s: it is read-only here; start `cyber-supervisor serve` to change it", h.home))
		return
	}
	h.once.Do(func() {
		if h.caps != nil {
			h.found = h.caps()
		}
	})
	if h.keep {
		h.mu.Lock()
		if h.held == nil {
			srv, closer, err := h.open(w, r)
			if srv == nil {
				h.mu.Unlock()
				if err != nil {
					writeReaderError(w, 0, err)
				}
				return
			}
			h.held, h.closer = srv, closer
		}
		srv := h.held
		h.mu.Unlock()
		srv.ServeHTTP(w, r)
		return
	}
	srv, closer, err := h.open(w, r)
	if srv == nil {
		if err != nil {
			writeReaderError(w, 0, err)
		}
		return
	}
	defer closer()
	srv.ServeHTTP(w, r)
}

// open opens the store read-only and the API over it; the store a
// daemon took meanwhile is answered by the daemon (nil, nil: done).
func (h *homeReader) open(w http.ResponseWriter, r *http.Request) (*api.InProcess, func(), *protocol.Error) {
	sup, err := supervisor.OpenReadOnly(r.Context(), supervisor.ReadOnlyConfig{Home: h.home, Logger: h.log, LockWait: readLockWait,
		Capabilities: h.found, Version: h.version})
	if errors.Is(err, store.ErrLocked) {
		// A daemon took the home meanwhile: it answers.
		if dm, derr := h.dial(); derr == nil {
			daemonProxy(dm.socket).ServeHTTP(w, r)
			return nil, nil, nil
		}
	}
	if err != nil {
		return nil, nil, readOpenError(err)
	}
	srv, err := api.NewInProcess(sup, h.log, api.Config{LongPoll: time.Millisecond})
	if err != nil {
		sup.Close(context.Background())
		return nil, nil, protocol.Errorf(protocol.CodeInternalError, "%s", protocol.SafeMessage(err.Error()))
	}
	return srv, func() { srv.Close(); sup.Close(context.Background()) }, nil
}

// close lets go of a store held open (keep).
func (h *homeReader) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closer != nil {
		h.closer()
		h.held, h.closer = nil, nil
	}
}

// readOpenError is the answer of a read whose open of the home failed:
// the error's code as the CLI gives it (a store a daemon took but whose
// socket does not answer yet is busy: a daemon is starting).
func readOpenError(err error) *protocol.Error {
	if errors.Is(err, store.ErrLocked) {
		return protocol.Errorf(protocol.CodeBusy, "%s: another process holds the store (a one-shot run, or a daemon starting) and no daemon answers on the socket yet; ask again", protocol.SafeMessage(err.Error()))
	}
	if errors.Is(err, store.ErrSchema) || errors.Is(err, supervisor.ErrNeedsStart) {
		return protocol.Errorf(protocol.CodeUnavailable, "%s", protocol.SafeMessage(err.Error()))
	}
	return envelopeError(err)
}

// writeReaderError answers err as the API answers errors (status 0: the
// code's).
func writeReaderError(w http.ResponseWriter, status int, err *protocol.Error) {
	if status == 0 {
		status = err.Code.HTTPStatus()
		if err.Code == protocol.CodeUnavailable {
			// The CLI's code has no status of the API's: over HTTP (the
			// dashboard's port) it is what it says.
			status = http.StatusServiceUnavailable
		}
	}
	body, merr := json.Marshal(api.ErrorBody{Error: err})
	if merr != nil {
		body = []byte(fmt.Sprintf(`{"error":{"code":%q,"message":"unencodable error"}}`, protocol.CodeInternalError))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(body, '\n'))
}

// hostCapabilities is what this host would enforce for a daemon started
// with the default flags: a launcher is made as a one-shot run makes it
// (a worker describes itself), asked and closed. Without one (no worker
// binary, no cgroups) the answer is the zero value, and the reason is
// logged.
func (a *app) hostCapabilities(ctx context.Context) func() launch.Capabilities {
	return func() launch.Capabilities {
		home, err := supervisor.ResolveHome(a.home)
		if err != nil {
			return launch.Capabilities{}
		}
		worker, err := findWorker("")
		if err == nil {
			var l *launch.ProcessLauncher
			l, err = launch.New(ctx, launch.Config{WorkerPath: worker, Home: home, Isolation: launch.IsolationAuto, Logger: a.logger("warn")})
			if err == nil {
				defer l.Close()
				return l.Capabilities()
			}
		}
		a.logger("warn").Warn("no daemon: what this host enforces is not known", "err", err)
		return launch.Capabilities{}
	}
}

// fenceReads are the fencing commands that only read: on a home no
// daemon owns they read the store read-only (fenceReading).
var fenceReads = map[string]bool{
	"neuron show": true, "grant show": true, "placement show": true, "prog list": true, "prog show": true,
	"invocation list": true, "invocation show": true, "operation list": true,
}

// fenceFor is the target of the fencing command name: a read reads
// (fenceReading), anything else acts through the daemon or on the home
// (fence); neuron init is the one that makes a home.
func (a *app) fenceFor(name string) (*fenceTarget, error) {
	if fenceReads[name] {
		return a.fenceReading()
	}
	return a.fence(name == "neuron init")
}

// fenceReading is the target of a fencing read: the daemon, or the
// home's store read-only through the API's handlers in process. A home
// without a store, or whose jobs are on a shared store, takes the
// offline path as before (no_store; the home's own file holds the
// neuron there).
func (a *app) fenceReading() (*fenceTarget, error) {
	dm, err := a.dialReader()
	var nde *noDaemonError
	if errors.As(err, &nde) {
		return a.fenceOffline(false)
	}
	if err != nil {
		return nil, err
	}
	if dm.readOnly && a.needsOffline(dm.home) {
		return a.fenceOffline(false)
	}
	return &fenceTarget{Fencer: dm.Client, mapErr: dm.err, close: dm.done, leave: leftForDaemon}, nil
}

// needsOffline says whether a fencing read of a home no daemon owns
// takes the offline path of the writing commands, which does there what
// a read may not: authenticate a schema 6 store's records with the
// vault's key (supervisor.ErrNeedsStart), or refuse a store older than
// its home that no start fenced yet (stale_state), as before.
func (a *app) needsOffline(home string) bool {
	sup, err := supervisor.OpenReadOnly(context.Background(), supervisor.ReadOnlyConfig{Home: home, Logger: a.logger("warn"), LockWait: readLockWait})
	if err != nil {
		return errors.Is(err, supervisor.ErrNeedsStart)
	}
	defer sup.Close(context.Background())
	reasons, err := sup.Unfenced(context.Background())
	return err == nil && len(reasons) > 0
}
