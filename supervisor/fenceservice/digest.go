package fenceservice

import (
	"context"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// InvocationDigest is fencing.InvocationDigest in the API's types: what
// the dashboard's fencing page shows of invocations and operations.
type InvocationDigest struct {
	ByStatus    map[string]int
	Invocations int
	Newest      []*apitypes.Invocation // newest first
	Operations  int
	Unknown     []apitypes.OperationReply
	UnknownMore int
}

// InvocationDigest reads the digest, keeping at most newest invocations
// and maxUnknown operations with an unknown attempt.
func (s *Service) InvocationDigest(ctx context.Context, newest, maxUnknown int) (*InvocationDigest, error) {
	d, err := s.e.InvocationDigest(ctx, newest, maxUnknown)
	if err != nil {
		return nil, err
	}
	out := &InvocationDigest{ByStatus: map[string]int{}, Invocations: d.Invocations, Newest: InvocationsOf(d.Newest),
		Operations: d.Operations, Unknown: OperationRepliesOf(d.Unknown), UnknownMore: d.UnknownMore}
	for status, n := range d.ByStatus {
		out.ByStatus[string(status)] = n
	}
	return out, nil
}
