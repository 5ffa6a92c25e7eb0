package worker

import (
	"context"
	"crypto/sha256"
	"io"
	"slices"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// A work dir that holds the supervisor's stream gets no artifact file: a
// prove, in either profile, writes its certificate into the stream and
// reports its size and digest, and the bytes the reader gets are that
// certificate (the same a file would hold). Before the stream existed
// the worker published a file and the reader got nothing.
func TestProveWritesIntoTheStream(t *testing.T) {
	w := newWorker(t, Config{})
	for _, profile := range []string{protocol.ProfilePublicTraceV2, protocol.ProfilePublicTrace} {
		t.Run(profile, func(t *testing.T) {
			dir := t.TempDir()
			got := readStream(t, dir)
			j := newJob(t, protocol.OpProve, spinNox(t), []uint64{12}, 1_000_000)
			j.Profile = profile
			res, err := w.Run(context.Background(), protocol.RunRequest{JobSpec: j.bytes(t), Attempt: 1, WorkDir: dir})
			if err != nil {
				t.Fatal(err)
			}
			b := <-got
			a := res.Artifact
			if a == nil || a.Name != protocol.StreamedArtifactName || a.Size != uint64(len(b)) || a.SHA256 != sha256.Sum256(b) || len(b) == 0 {
				t.Fatalf("artifact %+v, the stream carried %d bytes", a, len(b))
			}
			if names := dirNames(t, dir); !slices.Equal(names, []string{protocol.ArtifactStreamName}) {
				t.Fatalf("work dir holds %v, want only the stream", names)
			}
			if _, err := verifyIn(t, w, profile, b); err != nil {
				t.Fatalf("the streamed certificate does not verify: %v", err)
			}
		})
	}
}

// The worker's own count holds too: a certificate past the artifact
// limit is artifact_too_large, with the stream closed.
func TestProveStreamLimit(t *testing.T) {
	w := newWorker(t, Config{})
	dir := t.TempDir()
	got := readStream(t, dir)
	j := newJob(t, protocol.OpProve, spinNox(t), []uint64{12}, 1_000_000)
	j.Profile = protocol.ProfilePublicTraceV2
	j.Limits.ArtifactBytes = 100
	_, err := w.Run(context.Background(), protocol.RunRequest{JobSpec: j.bytes(t), Attempt: 1, WorkDir: dir})
	wantCode(t, err, protocol.CodeArtifactTooLarge, "")
	if n := len(<-got); n > 100 {
		t.Fatalf("the stream carried %d bytes, the limit is 100", n)
	}
}

// readStream makes the supervisor's stream in dir, as the supervisor
// does for a jailed prove, and reads it to its end on a goroutine: the
// channel gives what it carried.
func readStream(t *testing.T, dir string) <-chan []byte {
	t.Helper()
	d, err := artifacts.OpenDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	in, err := d.MakeStream(protocol.ArtifactStreamName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(in)
		got <- b
	}()
	return got
}
