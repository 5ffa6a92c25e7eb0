package pluginserver

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// idleService answers Describe with an error and never runs anything:
// these tests are about the transport.
type idleService struct{}

func (idleService) Describe(context.Context) (protocol.Capabilities, protocol.WorkerDescriptor, error) {
	return protocol.Capabilities{}, protocol.WorkerDescriptor{}, protocol.Errorf(protocol.CodeIOError, "no backend")
}
func (idleService) Run(context.Context, protocol.RunRequest) (protocol.Result, error) {
	return protocol.Result{}, protocol.Errorf(protocol.CodeIOError, "no backend")
}
func (idleService) Shutdown(context.Context) error { return nil }

func serve(t *testing.T) (string, *grpc.ClientConn) {
	t.Helper()
	dir, err := os.MkdirTemp("", "pluginserver")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := NewServer(idleService{}, 0)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(l) }()
	t.Cleanup(func() { s.Stop(); <-done })
	conn, err := grpc.NewClient("passthrough:///unused",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", path)
		}),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return path, conn
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func wantStatus(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	st := status.Convert(err)
	if st.Code() != code || !strings.Contains(st.Message(), msg) {
		t.Fatalf("status %v %q, want %v containing %q", st.Code(), st.Message(), code, msg)
	}
}

func TestHealth(t *testing.T) {
	_, conn := serve(t)
	h := grpc_health_v1.NewHealthClient(conn)
	for _, svc := range []string{"plugin", ""} {
		resp, err := h.Check(ctxT(t), &grpc_health_v1.HealthCheckRequest{Service: svc})
		if err != nil || resp.Status != grpc_health_v1.HealthCheckResponse_SERVING {
			t.Fatalf("%q: %v %v", svc, resp, err)
		}
	}
	_, err := h.Check(ctxT(t), &grpc_health_v1.HealthCheckRequest{Service: "other"})
	wantStatus(t, err, codes.NotFound, "unknown service")
}

func TestUnknownMethodsUnimplemented(t *testing.T) {
	_, conn := serve(t)
	for _, m := range []string{"/plugin.GRPCStdio/StreamStdio", "/plugin.GRPCBroker/StartStream", "/x.Y/Z"} {
		err := conn.Invoke(ctxT(t), m, &grpc_health_v1.HealthCheckRequest{}, &grpc_health_v1.HealthCheckResponse{})
		wantStatus(t, err, codes.Unimplemented, "unknown method")
	}
}

func TestCompressedRefused(t *testing.T) {
	_, conn := serve(t)
	_, err := workerpb.NewWorkerClient(conn).Describe(ctxT(t), &workerpb.DescribeRequest{}, grpc.UseCompressor(gzip.Name))
	wantStatus(t, err, codes.Unimplemented, "not supported")
}

// rawCodec sends bytes as they are, so that a test can send what no
// generated client would.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(b []byte, v any) error {
	*(v.(*[]byte)) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return "raw" }

func TestMalformedAndOversizeRequests(t *testing.T) {
	_, conn := serve(t)
	var out []byte
	bad := []byte{0x0e}
	err := conn.Invoke(ctxT(t), methodDescribe, &bad, &out, grpc.ForceCodec(rawCodec{}))
	wantStatus(t, err, codes.Internal, "unmarshalling")
	big := make([]byte, maxControlMessageBytes+1)
	err = conn.Invoke(ctxT(t), methodDescribe, &big, &out, grpc.ForceCodec(rawCodec{}))
	wantStatus(t, err, codes.ResourceExhausted, "larger than max")
	// The connection survives both.
	resp, err := workerpb.NewWorkerClient(conn).Describe(ctxT(t), &workerpb.DescribeRequest{})
	if err != nil || len(resp.ErrorJson) == 0 {
		t.Fatalf("describe after bad requests: %v %v", resp, err)
	}
}

func TestNotGRPCRefused(t *testing.T) {
	path, _ := serve(t)
	// HTTP/1.1 is not served at all; the connection is dropped.
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}}
	if resp, err := c.Get("http://worker/"); err == nil {
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Fatal("an HTTP/1 request was served")
		}
	}
}

func TestParseTimeout(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"1S": time.Second, "250m": 250 * time.Millisecond, "99999999n": 99999999, "2H": 2 * time.Hour,
		"5M": 5 * time.Minute, "7u": 7 * time.Microsecond, "99999999H": 1<<63 - 1,
	} {
		if got, err := parseTimeout(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "S", "1", "1x", "-1S", "123456789S", "1.5S"} {
		if _, err := parseTimeout(in); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestEncodeGrpcMessage(t *testing.T) {
	if got := encodeGrpcMessage("a 100% ü\n"); got != "a 100%25 %C3%BC%0A" {
		t.Fatalf("%q", got)
	}
	if !isGRPCContentType("application/grpc") || !isGRPCContentType("application/grpc+proto") ||
		isGRPCContentType("application/grpcx") || isGRPCContentType("text/plain") {
		t.Fatal("content types")
	}
}

// Whatever bytes follow the preface, a connection ends without a panic
// and without leaving a call behind.
func FuzzConn(f *testing.F) {
	settings := appendFrame(nil, frameSettings, 0, 0, nil)
	f.Add(settings)
	f.Add(appendFrame(settings, framePing, 0, 0, make([]byte, 8)))
	f.Add(appendFrame(settings, frameHeaders, flagEndHeaders, 1, []byte{0x83, 0x86}))
	f.Add(appendFrame(appendFrame(settings, frameHeaders, flagEndHeaders, 1, []byte{0x83}), frameData, flagEndStream, 1, []byte{0, 0, 0, 0, 1, 0}))
	f.Add(appendFrame(settings, frameHeaders, 0, 1, []byte{0x83}))
	f.Add(appendFrame(settings, frameWindowUpdate, 0, 0, []byte{0x7f, 0xff, 0xff, 0xff}))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := NewServer(idleService{}, 0)
		client, server := net.Pipe()
		c := newConn(s, server)
		done := make(chan struct{})
		go func() { defer close(done); c.serve() }()
		go func() {
			// The server's writes must not block the test: drain them.
			buf := make([]byte, 4096)
			for {
				if _, err := client.Read(buf); err != nil {
					return
				}
			}
		}()
		client.Write([]byte(clientPreface))
		client.Write(b)
		client.Close()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the connection did not end")
		}
		deadline := time.Now().Add(10 * time.Second)
		for s.activeCalls() > 0 {
			if time.Now().After(deadline) {
				t.Fatal("a call outlived its connection")
			}
			time.Sleep(time.Millisecond)
		}
	})
}

// A header block that names one large table entry over and over is
// refused before its decoded list grows past the announced bound.
func TestHeaderListBounded(t *testing.T) {
	c := newConn(NewServer(idleService{}, 0), nil)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	enc.WriteField(hpack.HeaderField{Name: "x-big", Value: strings.Repeat("v", 3000)})
	for i := 0; i < 100; i++ {
		enc.WriteField(hpack.HeaderField{Name: "x-big", Value: strings.Repeat("v", 3000)}) // indexed: 1-2 bytes each
	}
	if buf.Len() > 4000 {
		t.Fatalf("the block is %d bytes; the test wants a small one", buf.Len())
	}
	if _, err := c.decodeHeaders(buf.Bytes()); err == nil || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("decode: %v", err)
	}
}

// A header block split over HEADERS and CONTINUATION frames (grpc-go's
// headers are too small to need it, so this is the only test of it) is
// one call: a health check answered SERVING with status 0.
func TestContinuationAndTrailers(t *testing.T) {
	s := NewServer(idleService{}, 0)
	client, server := net.Pipe()
	defer client.Close()
	go newConn(s, server).serve()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", methodHealthCheck},
		{":authority", "x"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	block := hb.Bytes()
	req := []byte{0, 0, 0, 0, 0} // an empty HealthCheckRequest
	var out []byte
	out = append(out, clientPreface...)
	out = appendFrame(out, frameSettings, 0, 0, nil)
	out = appendFrame(out, frameHeaders, 0, 1, block[:5])
	out = appendFrame(out, frameContinuation, flagEndHeaders, 1, block[5:])
	out = appendFrame(out, frameData, flagEndStream, 1, req)
	go client.Write(out)

	dec := hpack.NewDecoder(4096, nil)
	var data []byte
	var status string
	client.SetReadDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(client)
	for status == "" {
		fh, p, _, err := readFrame(br, nil, 1<<24)
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		switch {
		case fh.typ == frameData && fh.streamID == 1:
			data = append(data, p...)
		case fh.typ == frameHeaders && fh.streamID == 1:
			fields, err := dec.DecodeFull(p)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fields {
				if f.Name == "grpc-status" {
					status = f.Value
				}
			}
		}
	}
	if status != "0" || !bytes.Equal(data, append([]byte{0, 0, 0, 0, byte(len(healthServing))}, healthServing...)) {
		t.Fatalf("status %q, data % x", status, data)
	}
}

// A reader waiting for request bytes that will never come (Run's cancel
// watcher, when the client keeps its side open) ends when the handler
// does, instead of outliving the call.
func TestHandlerDoneWakesReader(t *testing.T) {
	c := newConn(NewServer(idleService{}, 0), nil)
	ctx, cancel := context.WithCancel(context.Background())
	st := newStream(c, 1, cancel, 64)
	c.streams[1] = st
	done := make(chan error, 1)
	go func() { _, err := newCall(st).recv(); done <- err }()
	st.handlerDone()
	select {
	case err := <-done:
		if err == nil || err == io.EOF {
			t.Fatalf("recv after the handler ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the reader outlived the call")
	}
	if c.stream(1) != nil || ctx.Err() == nil {
		t.Fatal("the stream was not forgotten and cancelled")
	}
}
