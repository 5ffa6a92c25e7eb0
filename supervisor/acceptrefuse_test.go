package supervisor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// TestAcceptStreamRefusals: a produced certificate read as it is
// verified is refused with the codes of the acceptance that read it
// whole (a file over the artifact limit, a digest that differs, a
// damaged frame, bytes or an empty frame after it, another job's
// statement, another profile), never panics, and leaves nothing in the
// sandbox that would have kept it.
func TestAcceptStreamRefusals(t *testing.T) {
	ctx := context.Background()
	workPath := t.TempDir()
	spec, res, size := bigSpinJob(t, workPath, 8)
	good, err := os.ReadFile(filepath.Join(workPath, res.Artifact.Name))
	if err != nil {
		t.Fatal(err)
	}
	root, err := artifacts.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := &Supervisor{cfg: Config{VerifyMemoryBytes: 64 << 20}, sandboxes: root, log: slog.New(slog.DiscardHandler)}
	flip := bytes.Clone(good)
	flip[len(flip)/2] ^= 1
	for i, c := range []struct {
		name string
		file []byte
		edit func(*protocol.JobSpec, *protocol.Result)
		code protocol.Code
	}{
		{"over the artifact limit", good, func(js *protocol.JobSpec, _ *protocol.Result) { js.Limits.ArtifactBytes = uint64(size - 1) }, protocol.CodeArtifactTooLarge},
		{"another digest", good, func(_ *protocol.JobSpec, r *protocol.Result) { r.Artifact.SHA256[0] ^= 1 }, protocol.CodeProofRejected},
		{"a flipped byte", flip, nil, protocol.CodeProofRejected},
		{"cut short", good[:len(good)-100], nil, protocol.CodeProofRejected},
		{"bytes after the frame", append(bytes.Clone(good), 0, 0, 0), nil, protocol.CodeProofRejected},
		{"an empty frame after it", append(bytes.Clone(good), artifacts.Compress(nil, nil)...), nil, protocol.CodeProofRejected},
		{"another input", good, func(js *protocol.JobSpec, _ *protocol.Result) { js.Inputs = []uint64{9} }, protocol.CodeClaimMismatch},
		{"the v1 profile", good, func(js *protocol.JobSpec, r *protocol.Result) {
			js.Profile, r.Profile = protocol.ProfilePublicTrace, protocol.ProfilePublicTrace
		}, protocol.CodeProofRejected},
		{"not a frame", []byte("not zstd"), nil, protocol.CodeProofRejected},
	} {
		work := t.TempDir()
		if err := os.WriteFile(filepath.Join(work, res.Artifact.Name), c.file, 0o600); err != nil {
			t.Fatal(err)
		}
		dir, err := artifacts.OpenDir(work)
		if err != nil {
			t.Fatal(err)
		}
		js, r := *spec, *res
		ref := *res.Artifact
		ref.SHA256 = sha256.Sum256(c.file)
		r.Artifact = &ref
		if c.edit != nil {
			c.edit(&js, &r)
		}
		sb := &attemptSandbox{s: s, job: "refusal", n: uint32(i + 1)}
		_, perr := acceptForTest(ctx, s, &js, &r, dir, sb)
		if perr == nil || perr.Code != c.code {
			t.Errorf("%s: %v, want %s", c.name, perr, c.code)
		}
		if sb.dir != nil {
			if ents, err := os.ReadDir(sb.dir.Path()); err != nil || len(ents) != 0 {
				t.Errorf("%s: the sandbox holds %v (%v) after a refusal", c.name, ents, err)
			}
		}
		sb.close()
		dir.Close()
	}
}

// TestAcceptKeepsTheSupervisorsOwnFile: a certificate the supervisor
// itself wrote into the keeping sandbox (keeping.ours: a jailed
// worker's certificate collected from its stream) is verified there and
// kept as it is, the same file, not copied beside itself; one the worker
// wrote there (an unisolated worker) is replaced by the copy verified.
// Fails before keeping.ours (a second copy, a new inode, every time).
func TestAcceptKeepsTheSupervisorsOwnFile(t *testing.T) {
	root, err := artifacts.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := &Supervisor{cfg: Config{VerifyMemoryBytes: 64 << 20}, sandboxes: root, log: slog.New(slog.DiscardHandler)}
	scratch := t.TempDir()
	spec, res, _ := bigSpinJob(t, scratch, 8)
	file, err := os.ReadFile(filepath.Join(scratch, res.Artifact.Name))
	if err != nil {
		t.Fatal(err)
	}
	for i, ours := range []bool{true, false} {
		sb := &attemptSandbox{s: s, job: "own", n: uint32(i + 1)}
		dir, err := sb.open()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dir.Publish(res.Artifact.Name, bytes.NewReader(file), int64(len(file))); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir.Path(), res.Artifact.Name)
		before, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		keep := &keeping{s: s, sb: sb, work: dir, ours: ours}
		if _, _, perr := s.verify(context.Background(), spec, nil, res.Attempt, res, dir, keep); perr != nil {
			t.Fatalf("ours=%v: %v", ours, perr)
		}
		if perr := keep.commit(); perr != nil {
			t.Fatal(perr)
		}
		after, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if same := os.SameFile(before, after); same != ours {
			t.Errorf("ours=%v: the kept artifact is the same file: %v", ours, same)
		}
		ents, _ := os.ReadDir(dir.Path())
		if len(ents) != 1 {
			t.Errorf("ours=%v: the sandbox holds %d entries", ours, len(ents))
		}
		sb.close()
	}
}
