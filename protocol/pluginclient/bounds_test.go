package pluginclient

import (
	"context"
	"encoding/binary"
	"sync"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/pluginserver"
	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// go-plugin's client opens its broker and stdio streams on every
// connection by itself, with a 2 GiB receive limit. A worker's
// connection never opens them: handlers standing ready to answer them
// are never called, through a describe, a run and the client's close.
// (Before, both were opened on every connection; stdio's before Client
// returned.)
func TestConnectionOpensNoGoPluginStream(t *testing.T) {
	var mu sync.Mutex
	opened := map[string]int{}
	svc := &fakeService{run: func(_ context.Context, req protocol.RunRequest) (protocol.Result, error) {
		r := testResult()
		r.Attempt = req.Attempt
		return r, nil
	}}
	c, ts := pluginPairWith(t, svc, func(s *pluginserver.Server) {
		for _, m := range []string{"/plugin.GRPCStdio/StreamStdio", "/plugin.GRPCBroker/StartStream"} {
			s.Handle(m, 1<<10, func(ctx context.Context, _ *pluginserver.Stream) {
				mu.Lock()
				opened[m]++
				mu.Unlock()
				<-ctx.Done()
			})
		}
	})
	if _, _, err := c.Describe(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	run, err := c.Start(ctxT(t), testRequest(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if err := c.Shutdown(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	ts.wait(t)
	mu.Lock()
	defer mu.Unlock()
	if len(opened) != 0 {
		t.Fatalf("the connection opened %v", opened)
	}
}

// Each call the connection carries receives at most what its reply may
// hold: a reply that declares one byte more ends the call as the
// worker's fault (internal_error) as soon as its length is read, whatever
// follows. (Before, every reply up to 49 MiB was taken in, and go-plugin's
// own calls up to 2 GiB.)
func TestConnectionBoundsEachReply(t *testing.T) {
	accepted, err := proto.Marshal(&workerpb.RunEvent{Event: &workerpb.RunEvent_Accepted{Accepted: &workerpb.Accepted{}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		method string
		limit  int
		call   func(*Client) error
	}{
		{workerpb.Worker_Describe_FullMethodName, describeReplyBytes, func(c *Client) error {
			_, _, err := c.Describe(ctxT(t))
			return err
		}},
		{workerpb.Worker_Shutdown_FullMethodName, smallReplyBytes, func(c *Client) error { return c.Shutdown(ctxT(t)) }},
		{workerpb.Worker_Run_FullMethodName, runEventBytes, func(c *Client) error {
			run, err := c.Start(ctxT(t), testRequest(t))
			if err != nil {
				return err
			}
			_, err = run.Wait(ctxT(t))
			return err
		}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			c, _ := pluginPairWith(t, &fakeService{}, func(s *pluginserver.Server) {
				s.Handle(tc.method, protocol.MaxWireBytes, func(ctx context.Context, st *pluginserver.Stream) {
					if _, err := st.Recv(); err != nil {
						return
					}
					if tc.method == workerpb.Worker_Run_FullMethodName {
						if err := st.Send(accepted); err != nil {
							return
						}
					}
					// The length of a message one byte over the limit,
					// then bytes of it until the client hangs up.
					var prefix [5]byte
					binary.BigEndian.PutUint32(prefix[1:], uint32(tc.limit+1))
					if err := st.SendRaw(prefix[:]); err != nil {
						return
					}
					chunk := make([]byte, 64<<10)
					for sent := 0; sent <= tc.limit && ctx.Err() == nil; sent += len(chunk) {
						if st.SendRaw(chunk) != nil {
							return
						}
					}
				})
			})
			wantCode(t, tc.call(c), protocol.CodeInternalError, "larger than the protocol allows")
		})
	}
}
