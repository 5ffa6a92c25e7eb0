package main

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/cyberia-to/cyber-supervisor/protocol/pluginserver"
)

// Stream attacks (issue #26, item 3): go-plugin's client opens its stdio
// and broker streams on every connection by itself, and an honest worker
// answers both Unimplemented. These workers answer them instead, hold
// each stream open, and, as the job's Run begins (so that it is the
// job's connection that is attacked, not the one on which the launcher
// describes the worker), send through it what makes a supervisor that
// reads it grow; then they do the job. Each reports "hostile: STEP: N
// bytes sent, then: ERR", or that the supervisor never opened the
// stream. The worker itself holds 64 KiB of it at a time.

const (
	methodStdio  = "/plugin.GRPCStdio/StreamStdio"
	methodBroker = "/plugin.GRPCBroker/StartStream"
	// hugeStdioBytes is the data of the one StdioData message.
	hugeStdioBytes = 1 << 30
	// brokerFloodMessages is how many ConnInfo messages the flood sends.
	brokerFloodMessages = 1_000_000
	// streamWait is how long a Run waits for the supervisor to have
	// opened the stream (go-plugin's client opens the broker's from a
	// goroutine of its own).
	streamWait = 2 * time.Second
	chunkBytes = 64 << 10
)

func init() {
	for name, sa := range map[string]*streamAttack{
		// One StdioData message of 1 GiB on go-plugin's stdio stream.
		"stdio-huge": {step: "stdio", method: methodStdio, send: sendHugeStdio},
		// 10^6 small ConnInfo messages on go-plugin's broker stream,
		// each for another service id.
		"broker-flood": {step: "broker", method: methodBroker, send: sendBrokerFlood},
	} {
		sa.opened = make(chan *pluginserver.Stream, 1)
		sa.done = make(chan struct{})
		attacks[name] = attack{setup: sa.answer, before: sa.attack}
	}
}

type streamAttack struct {
	step   string
	method string
	send   func(st *pluginserver.Stream) (int64, error)
	opened chan *pluginserver.Stream // the first call of method
	done   chan struct{}             // closed when the attack is over
}

// answer serves method: the first call is handed to the attack and held
// open until it is over; later ones end at once.
func (sa *streamAttack) answer(s *pluginserver.Server) {
	s.Handle(sa.method, 1<<10, func(ctx context.Context, st *pluginserver.Stream) {
		select {
		case sa.opened <- st:
		default:
			return
		}
		select {
		case <-sa.done:
		case <-ctx.Done():
		}
	})
}

// attack runs as the job's Run begins.
func (sa *streamAttack) attack(string) {
	select {
	case st := <-sa.opened:
		n, err := sa.send(st)
		close(sa.done)
		report(sa.step, fmt.Errorf("%d bytes sent, then: %v", n, err))
	case <-time.After(streamWait):
		report(sa.step, errors.New("the supervisor never opened the stream"))
	}
}

// sendHugeStdio sends StdioData{channel: STDOUT, data: 1 GiB}: the gRPC
// length prefix and the fields' headers, then the data 64 KiB at a time.
func sendHugeStdio(st *pluginserver.Stream) (int64, error) {
	head := protowire.AppendTag(nil, 1, protowire.VarintType)
	head = protowire.AppendVarint(head, 1) // STDOUT
	head = protowire.AppendTag(head, 2, protowire.BytesType)
	head = protowire.AppendVarint(head, hugeStdioBytes)
	head = append(grpcPrefix(len(head)+hugeStdioBytes), head...)
	if err := st.SendRaw(head); err != nil {
		return 0, err
	}
	sent := int64(len(head))
	chunk := make([]byte, chunkBytes)
	for i := range chunk {
		chunk[i] = 'x'
	}
	for left := hugeStdioBytes; left > 0; left -= len(chunk) {
		if err := st.SendRaw(chunk[:min(left, len(chunk))]); err != nil {
			return sent, err
		}
		sent += int64(min(left, len(chunk)))
	}
	return sent, nil
}

// sendBrokerFlood sends ConnInfo{service_id: i, network: "unix",
// address: "/x"} for i = 1..10^6, as many to a write as fit in 64 KiB.
func sendBrokerFlood(st *pluginserver.Stream) (int64, error) {
	var sent int64
	buf := make([]byte, 0, chunkBytes+64)
	for i := 1; i <= brokerFloodMessages; i++ {
		msg := protowire.AppendTag(nil, 1, protowire.VarintType)
		msg = protowire.AppendVarint(msg, uint64(i))
		msg = protowire.AppendTag(msg, 2, protowire.BytesType)
		msg = protowire.AppendString(msg, "unix")
		msg = protowire.AppendTag(msg, 3, protowire.BytesType)
		msg = protowire.AppendString(msg, "/x")
		buf = append(append(buf, grpcPrefix(len(msg))...), msg...)
		if len(buf) >= chunkBytes || i == brokerFloodMessages {
			if err := st.SendRaw(buf); err != nil {
				return sent, err
			}
			sent += int64(len(buf))
			buf = buf[:0]
		}
	}
	return sent, nil
}

// grpcPrefix is the length prefix of an uncompressed gRPC message.
func grpcPrefix(n int) []byte {
	p := make([]byte, 5)
	binary.BigEndian.PutUint32(p[1:], uint32(n))
	return p
}
