package pluginserver

import (
	"bytes"
	"testing"

	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// The hand-written codec is checked against the code protoc generated from
// worker.proto, which the supervisor's client uses: same bytes out, same
// meaning in.

func TestEncodeMatchesGenerated(t *testing.T) {
	payload := []byte(`{"code":"cancelled"}`)
	cases := []struct {
		name string
		ours []byte
		gen  proto.Message
	}{
		{"accepted", encodeRunEvent(eventAccepted, nil), &workerpb.RunEvent{Event: &workerpb.RunEvent_Accepted{Accepted: &workerpb.Accepted{}}}},
		{"cancel ack", encodeRunEvent(eventCancelAck, nil), &workerpb.RunEvent{Event: &workerpb.RunEvent_CancelAck{CancelAck: &workerpb.CancelAck{}}}},
		{"result", encodeRunEvent(eventResult, payload), &workerpb.RunEvent{Event: &workerpb.RunEvent_Result{Result: &workerpb.Result{ResultJson: payload}}}},
		{"empty result", encodeRunEvent(eventResult, nil), &workerpb.RunEvent{Event: &workerpb.RunEvent_Result{Result: &workerpb.Result{}}}},
		{"failure", encodeRunEvent(eventFailure, payload), &workerpb.RunEvent{Event: &workerpb.RunEvent_Failure{Failure: &workerpb.Failure{ErrorJson: payload}}}},
		{"large failure", encodeRunEvent(eventFailure, bytes.Repeat([]byte("x"), 70000)), &workerpb.RunEvent{Event: &workerpb.RunEvent_Failure{Failure: &workerpb.Failure{ErrorJson: bytes.Repeat([]byte("x"), 70000)}}}},
		{"describe", encodeDescribeResponse([]byte("c"), []byte("d"), nil), &workerpb.DescribeResponse{CapabilitiesJson: []byte("c"), DescriptorJson: []byte("d")}},
		{"describe error", encodeDescribeResponse(nil, nil, payload), &workerpb.DescribeResponse{ErrorJson: payload}},
		{"shutdown", encodeShutdownResponse(nil), &workerpb.ShutdownResponse{}},
		{"shutdown error", encodeShutdownResponse(payload), &workerpb.ShutdownResponse{ErrorJson: payload}},
		{"health", healthServing, &grpc_health_v1.HealthCheckResponse{Status: grpc_health_v1.HealthCheckResponse_SERVING}},
	}
	for _, c := range cases {
		want, err := proto.MarshalOptions{Deterministic: true}.Marshal(c.gen)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(c.ours, want) {
			t.Errorf("%s: % x, generated code gives % x", c.name, head(c.ours), head(want))
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 32)] }

func TestDecodeMatchesGenerated(t *testing.T) {
	for _, in := range []*workerpb.RunInput{
		{},
		{Msg: &workerpb.RunInput_Start{Start: &workerpb.Start{}}},
		{Msg: &workerpb.RunInput_Start{Start: &workerpb.Start{JobSpecJson: []byte(`{"a":1}`), Attempt: 7, WorkDir: "/work/j/1"}}},
		{Msg: &workerpb.RunInput_Start{Start: &workerpb.Start{Attempt: 1<<32 - 1, WorkDir: "/ü"}}},
		{Msg: &workerpb.RunInput_Cancel{Cancel: &workerpb.Cancel{}}},
		{Msg: &workerpb.RunInput_Cancel{Cancel: &workerpb.Cancel{Reason: "operator request"}}},
	} {
		b, err := proto.Marshal(in)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decodeRunInput(b)
		if err != nil {
			t.Fatalf("%v: %v", in, err)
		}
		if !sameRunInput(got, in) {
			t.Fatalf("decoded %+v from %v", got, in)
		}
	}
	b, _ := proto.Marshal(&grpc_health_v1.HealthCheckRequest{Service: "plugin"})
	if s, err := decodeHealthCheckRequest(b); err != nil || s != "plugin" {
		t.Fatalf("health request: %q %v", s, err)
	}
	b, _ = proto.Marshal(&emptypb.Empty{})
	if err := decodeEmpty(b); err != nil {
		t.Fatal(err)
	}
}

// The decoder's proto3 rules, each against the generated code.
func TestDecodeRules(t *testing.T) {
	start := func(fields ...[]byte) []byte { return appendMessageField(nil, 1, bytes.Join(fields, nil)) }
	cancel := func(fields ...[]byte) []byte { return appendMessageField(nil, 2, bytes.Join(fields, nil)) }
	attempt := func(v uint64) []byte { return appendVarint(appendTag(nil, 2, wireVarint), v) }
	workDir := func(s string) []byte { return appendBytesField(nil, 3, []byte(s)) }
	cases := map[string][]byte{
		"last scalar wins":             start(attempt(1), attempt(2)),
		"attempt truncated to 32 bits": start(attempt(1<<32 + 5)),
		"messages merge":               append(start(attempt(3)), start(workDir("/w"))...),
		"oneof replaced":               append(start(attempt(3)), cancel(appendBytesField(nil, 1, []byte("r")))...),
		"oneof replaced back":          append(cancel(), start(workDir("/x"))...),
		"unknown fields skipped": append(append(appendVarint(appendTag(nil, 9, wireVarint), 1),
			appendTag(nil, 10, wireFixed64)...), append(make([]byte, 8), start(attempt(4))...)...),
		"wrong wire type skipped":  append(appendVarint(appendTag(nil, 1, wireVarint), 5), start(attempt(5))...),
		"group skipped":            append(append(appendTag(nil, 7, wireStart), append(attempt(1), appendTag(nil, 7, wireEnd)...)...), start(attempt(6))...),
		"invalid utf-8":            start(workDir("/\xff")),
		"truncated":                start(attempt(3))[:3],
		"field zero":               {0x00, 0x01},
		"wire type 6":              {0x0e},
		"lone end group":           {0x0c},
		"mismatched group":         append(appendTag(nil, 7, wireStart), appendTag(nil, 8, wireEnd)...),
		"unterminated group":       appendTag(nil, 7, wireStart),
		"varint overflow":          append(appendTag(nil, 9, wireVarint), bytes.Repeat([]byte{0xff}, 10)...),
		"length past the end":      {0x0a, 0x05, 0x00},
		"tenth varint byte is one": append(appendTag(nil, 9, wireVarint), append(bytes.Repeat([]byte{0xff}, 9), 0x01)...),
		// Above protobuf's largest field number (2^29-1) but within an
		// int32: refused as a field of the message, skipped inside a group.
		"field number 2^29":          appendVarint(nil, 1<<29<<3),
		"field number 2^29 in group": append(appendTag(nil, 7, wireStart), append(appendVarint(appendVarint(nil, 1<<29<<3), 1), appendTag(nil, 7, wireEnd)...)...),
		"field number 2^31 in group": append(appendTag(nil, 7, wireStart), append(appendVarint(appendVarint(nil, 1<<31<<3), 1), appendTag(nil, 7, wireEnd)...)...),
	}
	for name, b := range cases {
		checkAgainstGenerated(t, name, b)
	}
}

func checkAgainstGenerated(t *testing.T, name string, b []byte) {
	t.Helper()
	var gen workerpb.RunInput
	genErr := proto.Unmarshal(b, &gen)
	got, err := decodeRunInput(b)
	if (err == nil) != (genErr == nil) {
		t.Fatalf("%s: % x: decode error %v, generated code's %v", name, b, err, genErr)
	}
	if err == nil && !sameRunInput(got, &gen) {
		t.Fatalf("%s: % x: decoded %+v, generated code %v", name, b, got, &gen)
	}
}

func sameRunInput(got runInput, want *workerpb.RunInput) bool {
	switch m := want.Msg.(type) {
	case nil:
		return got.start == nil && got.cancel == nil
	case *workerpb.RunInput_Start:
		s := got.start
		return s != nil && got.cancel == nil && bytes.Equal(s.jobSpec, m.Start.JobSpecJson) &&
			s.attempt == m.Start.Attempt && s.workDir == m.Start.WorkDir
	case *workerpb.RunInput_Cancel:
		return got.cancel != nil && got.start == nil && got.cancel.reason == m.Cancel.Reason
	}
	return false
}

func FuzzDecodeRunInput(f *testing.F) {
	for _, in := range []*workerpb.RunInput{
		{Msg: &workerpb.RunInput_Start{Start: &workerpb.Start{JobSpecJson: []byte(`{}`), Attempt: 7, WorkDir: "/w"}}},
		{Msg: &workerpb.RunInput_Cancel{Cancel: &workerpb.Cancel{Reason: "r"}}},
	} {
		b, _ := proto.Marshal(in)
		f.Add(b)
	}
	f.Add([]byte{0x3b, 0x10, 0x01, 0x3c})
	f.Fuzz(func(t *testing.T, b []byte) {
		checkAgainstGenerated(t, "fuzz", b)
	})
}
