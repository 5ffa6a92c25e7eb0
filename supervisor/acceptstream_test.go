package supervisor

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/race"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/launch/launchtest"
)

// storedFrame frames content as one zstd frame of raw (stored) blocks of
// 128 KiB, declaring no content size and a window of 128 KiB: a valid
// frame whose compressed size is its content's, the cheapest way to a
// certificate of many compressed bytes (a real prover's frame of a hash
// chain compresses to about 1.5 bytes per reduction; this one to 1).
func storedFrame(content []byte) []byte {
	const block = 128 << 10
	f := []byte{0x28, 0xb5, 0x2f, 0xfd, 0x00, (17 - 10) << 3}
	for off := 0; ; off += block {
		n := min(block, len(content)-off)
		bh := uint32(n) << 3 // raw block
		if off+n == len(content) {
			bh |= 1
		}
		f = binary.LittleEndian.AppendUint32(f, bh)[:len(f)+3]
		f = append(f, content[off:off+n]...)
		if bh&1 == 1 {
			return f
		}
	}
}

// bigSpinJob proves the corpus's spin(d) in v2 and writes it, stored, as
// the artifact name of a prove job into work; it returns the job and the
// worker's result naming it.
func bigSpinJob(t *testing.T, work string, d uint64) (*protocol.JobSpec, *protocol.Result, int64) {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "noxrunner", "cert", "testdata", "corpus", "spin.nox"))
	if err != nil {
		t.Fatal(err)
	}
	program := strings.TrimSpace(string(src))
	prog, err := noun.Parse(program)
	if err != nil {
		t.Fatal(err)
	}
	const budget = 1 << 40
	var raw bytes.Buffer
	run, err := cert.ProveTo(context.Background(), &raw, prog, []uint64{d}, budget, cert.ProveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	file := storedFrame(raw.Bytes())
	raw = bytes.Buffer{}
	if err := os.WriteFile(filepath.Join(work, "certificate.zst"), file, 0o600); err != nil {
		t.Fatal(err)
	}
	b := launchtest.JobWith(t, "big-cert", protocol.OpProve, program, []uint64{d},
		protocol.Limits{Reductions: budget, MemoryBytes: 64 << 20, ArtifactBytes: 1 << 30},
		func(js *protocol.JobSpec) { js.Profile = protocol.ProfilePublicTraceV2 })
	spec, err := protocol.ParseJobSpec(b)
	if err != nil {
		t.Fatal(err)
	}
	p, err := protocol.ParseBundle(spec.Program.Bundle)
	if err != nil {
		t.Fatal(err)
	}
	res := &protocol.Result{Contract: protocol.ContractV1, JobID: spec.JobID, Attempt: 1, Profile: spec.Profile,
		Kind: protocol.KindExecutionCertificate, ProgramIdentity: p.Identity(), Budget: budget,
		Reductions: run.Statement.Reductions,
		Artifact:   &protocol.ArtifactRef{Name: "certificate.zst", Size: uint64(len(file)), SHA256: sha256.Sum256(file)}}
	return spec, res, int64(len(file))
}

// heapPeak samples the heap in use while f runs and returns its peak
// above what was in use before, with the garbage collector running
// often so that what it counts is what f holds, not what it dropped.
func heapPeak(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base, peak := ms.HeapAlloc, ms.HeapAlloc
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak - base
}

// TestAcceptStreamsTheCertificate: the supervisor accepts a produced
// certificate of tens of MB compressed (spin(20)'s v2 certificate,
// 25,165,810 reductions, stored: 25 MB; spin(17), 3 MB, under the race
// detector) while the heap it holds stays a small fraction of it: the
// file is hashed, verified and copied into the kept sandbox as it is
// read, and the kept copy is the file byte for byte. Fails before: the
// acceptance read the whole file into memory (dir.ReadFile), its heap
// grew by the certificate's size (25.2 MB for spin(20), measured).
func TestAcceptStreamsTheCertificate(t *testing.T) {
	d := uint64(20)
	if race.Enabled || testing.Short() {
		d = 17
	}
	workPath := t.TempDir()
	spec, res, size := bigSpinJob(t, workPath, d)
	work, err := artifacts.OpenDir(workPath)
	if err != nil {
		t.Fatal(err)
	}
	defer work.Close()
	root, err := artifacts.OpenRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	s := &Supervisor{cfg: Config{VerifyMemoryBytes: 64 << 20}, sandboxes: root, log: slog.New(slog.DiscardHandler)}
	sb := &attemptSandbox{s: s, job: spec.JobID, n: 1}
	defer sb.close()
	var (
		final protocol.Result
		perr  *protocol.Error
	)
	var (
		rss, hwm int64
		took     time.Duration
	)
	grew := heapPeak(func() {
		debug.FreeOSMemory()
		rss, hwm = resetPeakRSS(t)
		start := time.Now()
		final, perr = acceptForTest(context.Background(), s, spec, res, work, sb)
		took = time.Since(start)
		_, hwm = resetPeakRSS(t)
	})
	if perr != nil {
		t.Fatalf("acceptance: %v", perr)
	}
	t.Logf("certificate %d bytes compressed, %d reductions, accepted in %v: heap grew by %d bytes while it was accepted; peak RSS %d bytes above the RSS before (%d)",
		size, final.Reductions, took, grew, hwm-rss, rss)
	if final.Artifact == nil || final.Artifact.Size != uint64(size) || final.Reductions != res.Reductions {
		t.Fatalf("accepted %+v, want the certificate of %d bytes and %d reductions", final.Artifact, size, res.Reductions)
	}
	if grew > uint64(size)/2 {
		t.Errorf("the heap grew by %d bytes accepting a certificate of %d: it grows with the certificate", grew, size)
	}
	kept, err := os.ReadFile(filepath.Join(sb.dir.Path(), res.Artifact.Name))
	if err != nil || sha256.Sum256(kept) != res.Artifact.SHA256 {
		t.Errorf("kept copy: %d bytes, %v; want the certificate", len(kept), err)
	}
}

// acceptForTest is accept's verification and keeping of a produced
// certificate, without its store.
func acceptForTest(ctx context.Context, s *Supervisor, spec *protocol.JobSpec, res *protocol.Result, work *artifacts.Dir, sb *attemptSandbox) (protocol.Result, *protocol.Error) {
	keep := &keeping{s: s, sb: sb, work: work}
	final, _, perr := s.verify(ctx, spec, nil, res.Attempt, res, work, keep)
	if perr != nil {
		return final, perr
	}
	return final, keep.commit()
}

// resetPeakRSS reads this process's resident set and its peak since the
// last reset (VmRSS, VmHWM, /proc/self/status), then resets the peak
// (clear_refs 5): a figure for the log, not a check (the collector
// returns memory to the system when it likes).
func resetPeakRSS(t *testing.T) (rss, hwm int64) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Logf("peak RSS: %v", err)
		return 0, 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		var kb int64
		if n, _ := fmt.Sscanf(line, "VmRSS: %d kB", &kb); n == 1 {
			rss = kb << 10
		}
		if n, _ := fmt.Sscanf(line, "VmHWM: %d kB", &kb); n == 1 {
			hwm = kb << 10
		}
	}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		t.Logf("reset peak RSS: %v", err)
	}
	return rss, hwm
}
