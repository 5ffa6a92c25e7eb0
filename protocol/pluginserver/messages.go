package pluginserver

// The messages of worker.proto (package cyber.worker.v1), of gRPC's health
// service and of go-plugin's controller that a worker receives or sends.
// Field numbers are those of the .proto files.

// runInput is RunInput: at most one of start and cancel is set.
type runInput struct {
	start  *startMsg
	cancel *cancelMsg
}

type startMsg struct {
	jobSpec []byte
	attempt uint32
	workDir string
}

type cancelMsg struct {
	reason string
}

func decodeRunInput(b []byte) (runInput, error) {
	var in runInput
	err := fields(b, func(f field) error {
		if f.typ != wireBytes {
			return nil
		}
		switch f.num {
		case 1:
			if in.start == nil {
				in.start, in.cancel = &startMsg{}, nil
			}
			return in.start.merge(f.bytes)
		case 2:
			if in.cancel == nil {
				in.cancel, in.start = &cancelMsg{}, nil
			}
			return in.cancel.merge(f.bytes)
		}
		return nil
	})
	return in, err
}

func (s *startMsg) merge(b []byte) error {
	return fields(b, func(f field) error {
		switch {
		case f.num == 1 && f.typ == wireBytes:
			s.jobSpec = f.bytes
		case f.num == 2 && f.typ == wireVarint:
			s.attempt = uint32(f.value)
		case f.num == 3 && f.typ == wireBytes:
			v, err := utf8String(f.bytes)
			if err != nil {
				return err
			}
			s.workDir = v
		}
		return nil
	})
}

func (c *cancelMsg) merge(b []byte) error {
	return fields(b, func(f field) error {
		if f.num == 1 && f.typ == wireBytes {
			v, err := utf8String(f.bytes)
			if err != nil {
				return err
			}
			c.reason = v
		}
		return nil
	})
}

// decodeEmpty checks a message without known fields (DescribeRequest,
// ShutdownRequest, google.protobuf.Empty) for well-formedness.
func decodeEmpty(b []byte) error {
	return fields(b, func(field) error { return nil })
}

// decodeHealthCheckRequest returns grpc.health.v1.HealthCheckRequest's
// service.
func decodeHealthCheckRequest(b []byte) (string, error) {
	var service string
	err := fields(b, func(f field) error {
		if f.num == 1 && f.typ == wireBytes {
			v, err := utf8String(f.bytes)
			if err != nil {
				return err
			}
			service = v
		}
		return nil
	})
	return service, err
}

// RunEvent's members, by field number.
const (
	eventAccepted  = 1
	eventCancelAck = 2
	eventResult    = 3
	eventFailure   = 4
)

// encodeRunEvent encodes a RunEvent with the member num set. Accepted and
// CancelAck are empty; Result and Failure carry one bytes field (1).
func encodeRunEvent(num int, payload []byte) []byte {
	inner := appendBytesField(nil, 1, payload)
	return appendMessageField(make([]byte, 0, len(inner)+12), num, inner)
}

func encodeDescribeResponse(capabilities, descriptor, errJSON []byte) []byte {
	b := appendBytesField(nil, 1, capabilities)
	b = appendBytesField(b, 2, descriptor)
	return appendBytesField(b, 3, errJSON)
}

func encodeShutdownResponse(errJSON []byte) []byte {
	return appendBytesField(nil, 1, errJSON)
}

// healthServing is HealthCheckResponse{status: SERVING (1)}.
var healthServing = appendVarint(appendTag(nil, 1, wireVarint), 1)
