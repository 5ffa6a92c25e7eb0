package main

import (
	"context"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
)

// Ids as the fencing commands take them: whole, or a unique prefix.

// resolveID reads an id given whole or as a unique prefix of at least 6
// hex digits, among the ids ids lists.
func resolveID(what, given string, ids func() ([]string, error)) (string, error) {
	if len(given) == 64 {
		return given, nil
	}
	if len(given) < 6 || strings.Trim(given, "0123456789abcdef") != "" {
		return "", usagef("%s id %s: want 64 lowercase hex digits, or a unique prefix of at least 6", what, protocol.QuotePrefix(given))
	}
	all, err := ids()
	if err != nil {
		return "", err
	}
	match := ""
	for _, id := range all {
		if strings.HasPrefix(id, given) {
			if match != "" {
				return "", usagef("%s id prefix %s is not unique", what, given)
			}
			match = id
		}
	}
	if match == "" {
		return "", protocol.Errorf(protocol.CodeInvalidJob, "missing: no %s starts with %s", what, given)
	}
	return match, nil
}

func (f *fenceTarget) progID(ctx context.Context, given string) (string, error) {
	return resolveID("prog", given, func() ([]string, error) {
		ps, err := f.Progs(ctx)
		ids := make([]string, len(ps))
		for i, p := range ps {
			ids[i] = p.ID
		}
		return ids, err
	})
}

func (f *fenceTarget) invocationID(ctx context.Context, given string) (string, error) {
	return resolveID("invocation", given, func() ([]string, error) {
		invs, err := f.Invocations(ctx)
		ids := make([]string, len(invs))
		for i, v := range invs {
			ids[i] = v.ID
		}
		return ids, err
	})
}

func (f *fenceTarget) operationID(ctx context.Context, given string) (string, error) {
	return resolveID("operation", given, func() ([]string, error) {
		ops, err := f.Operations(ctx, "")
		ids := make([]string, len(ops))
		for i, op := range ops {
			ids[i] = op.ID
		}
		return ids, err
	})
}

// machineID is the host's machine id, or "" (the engine says unknown).
func machineID() string {
	if id := supervisor.DeviceID(); id != "" {
		return id
	}
	return ""
}
