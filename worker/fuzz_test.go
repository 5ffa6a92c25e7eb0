package worker

import (
	"context"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// FuzzRunSpec feeds arbitrary job specs to Run. protocol fuzzes the
// parser; this covers what the worker does with whatever gets through it:
// no panic, and every failure is a known code that a worker may produce
// (never internal_error, which would be a worker bug).
func FuzzRunSpec(f *testing.F) {
	for _, op := range []protocol.Operation{protocol.OpExecute, protocol.OpProve} {
		f.Add(newJob(f, op, addNox, []uint64{3, 5}, 100).bytes(f))
		f.Add(newJob(f, op, invNox, []uint64{0}, 100).bytes(f))
		f.Add(newJob(f, op, "[16 [[1 7] [1 0]]]", nil, 100).bytes(f))
	}
	j := newJob(f, protocol.OpVerify, addNox, []uint64{3, 5}, 1000)
	j.Artifact = artifacts.Compress(nil, certificateOf(f, addNox, []uint64{3, 5}, 1000))
	f.Add(j.bytes(f))
	w := newWorker(f, Config{})
	f.Fuzz(func(t *testing.T, spec []byte) {
		// Keep runs short: the budget in a fuzzed spec can be huge.
		ctx, cancel := context.WithTimeout(context.Background(), 200_000_000)
		defer cancel()
		res, err := w.Run(ctx, protocol.RunRequest{JobSpec: spec, Attempt: 1, WorkDir: t.TempDir()})
		if err == nil {
			if verr := res.Validate(); verr != nil {
				t.Fatalf("invalid result: %v", verr)
			}
			return
		}
		code := protocol.CodeOf(err)
		if !code.Known() || code == protocol.CodeInternalError {
			t.Fatalf("error %v", err)
		}
	})
}

// FuzzVerifyArtifact feeds arbitrary certificate files to a verify job for
// add(3, 5): only the verify codes may come out, and acceptance only for a
// certificate of exactly that computation.
func FuzzVerifyArtifact(f *testing.F) {
	raw := certificateOf(f, addNox, tamperInputs, tamperBudget)
	f.Add(artifacts.Compress(nil, raw))
	f.Add(raw)
	f.Add(zstdFrame(uint64(len(raw)), raw))
	f.Add(zstdFrame(1<<40, raw[:16]))
	w := newWorker(f, Config{})
	f.Fuzz(func(t *testing.T, file []byte) {
		if len(file) == 0 {
			return // not a verify job at all
		}
		err := verifyCode(t, w, file, nil)
		switch protocol.CodeOf(err) {
		case "":
			st, rerr := w.ReadStatement(file, tamperBudget)
			if rerr != nil || st.Reductions != 3 || len(st.Outputs) != 1 || st.Outputs[0] != 8 {
				t.Fatalf("accepted %x: %v %+v", file, rerr, st)
			}
		case protocol.CodeProofRejected, protocol.CodeClaimMismatch, protocol.CodeArtifactTooLarge:
		default:
			t.Fatalf("verify: %v", err)
		}
	})
}
