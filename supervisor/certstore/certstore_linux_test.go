package certstore

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

func refOfBytes(b []byte) protocol.CertificateRef {
	return protocol.CertificateRef{SHA256: sha256.Sum256(b), Size: uint64(len(b))}
}

// A certificate is stored once under its digest, whatever the number of
// puts; bytes that are not the ref's are never published under it.
func TestPutStoresOnce(t *testing.T) {
	home := t.TempDir()
	s, err := Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := bytes.Repeat([]byte("certificate "), 10000)
	ref := refOfBytes(data)
	if err := s.Check(ref); !errors.Is(err, ErrMissing) {
		t.Fatalf("Check before Put: %v, want ErrMissing", err)
	}
	wrote, err := s.Put(ref, bytes.NewReader(data))
	if err != nil || !wrote {
		t.Fatalf("first Put: %v, %v", wrote, err)
	}
	st1, err := os.Stat(s.Path(ref))
	if err != nil || st1.Mode().Perm() != 0o600 {
		t.Fatalf("stored file: %v, %v", st1, err)
	}
	// The second put reads nothing and writes nothing.
	wrote, err = s.Put(ref, errReader{})
	if err != nil || wrote {
		t.Fatalf("second Put: %v, %v", wrote, err)
	}
	st2, _ := os.Stat(s.Path(ref))
	if !os.SameFile(st1, st2) {
		t.Fatal("the second Put replaced the file")
	}
	if err := s.Check(ref); err != nil {
		t.Fatal(err)
	}

	// Other bytes under a ref are refused, and nothing is left.
	other := refOfBytes([]byte("another certificate"))
	for name, body := range map[string][]byte{
		"other digest": []byte("another certificatE"),
		"shorter":      []byte("another"),
		"longer":       []byte("another certificate!"),
	} {
		if _, err := s.Put(other, bytes.NewReader(body)); !errors.Is(err, ErrMismatch) {
			t.Errorf("%s: Put %v, want ErrMismatch", name, err)
		}
	}
	entries, _ := os.ReadDir(Path(home))
	if len(entries) != 1 || entries[0].Name() != ref.Hex() {
		t.Fatalf("store holds %v, want only %s", entries, ref.Hex())
	}

	// A stored file of another size than the ref's is refused.
	short := ref
	short.Size--
	if err := s.Check(short); !errors.Is(err, ErrMismatch) {
		t.Fatalf("Check of another size: %v", err)
	}
	if err := s.Remove(ref); err != nil {
		t.Fatal(err)
	}
	if err := s.Check(ref); !errors.Is(err, ErrMissing) {
		t.Fatalf("Check after Remove: %v", err)
	}
}

func TestPutFile(t *testing.T) {
	home := t.TempDir()
	s, err := Open(home)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	data := bytes.Repeat([]byte{1, 2, 3}, 5000)
	path := filepath.Join(t.TempDir(), "cert.zst")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ref, err := s.PutFile(f, uint64(len(data)))
	if err != nil || ref != refOfBytes(data) {
		t.Fatalf("PutFile: %v, %v", ref, err)
	}
	got, err := os.ReadFile(s.Path(ref))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("stored bytes differ: %v", err)
	}
	var perr *protocol.Error
	f.Seek(0, 0)
	if _, err := s.PutFile(f, uint64(len(data)-1)); !errors.As(err, &perr) || perr.Code != protocol.CodeArtifactTooLarge {
		t.Fatalf("PutFile over its limit: %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("read") }

// Stored lists the certificates and nothing else of the directory, each
// with when it was last stored: a Put of a certificate already there
// makes it as young as a new one (gc keeps an unnamed certificate for a
// while after it was stored). Fails before: no Stored, and a second Put
// left the file's time as it was.
func TestStoredListsCertificatesByLastPut(t *testing.T) {
	s, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a, b := []byte("certificate a"), []byte("certificate b")
	for _, data := range [][]byte{a, b} {
		if _, err := s.Put(refOfBytes(data), bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	// Not certificates: a writer's temporary file, another name, a
	// directory with a digest's name.
	dir := s.dir.Path()
	for _, name := range []string{".tmp-0123", "notes.txt", strings.ToUpper(refOfBytes(a).Hex())} {
		if err := os.WriteFile(filepath.Join(dir, name), a, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, refOfBytes([]byte("dir")).Hex()), 0o700); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	if err := os.Chtimes(s.Path(refOfBytes(a)), old, old); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(s.Path(refOfBytes(b)), old, old); err != nil {
		t.Fatal(err)
	}
	before := time.Now().Add(-time.Minute)
	if wrote, err := s.Put(refOfBytes(b), errReader{}); err != nil || wrote {
		t.Fatalf("second Put of b: %v %v", wrote, err)
	}
	got, err := s.Stored()
	if err != nil {
		t.Fatal(err)
	}
	when := map[string]time.Time{}
	for _, e := range got {
		when[e.SHA256] = e.Stored
	}
	if len(got) != 2 || !when[refOfBytes(a).Hex()].Equal(old) || when[refOfBytes(b).Hex()].Before(before) {
		t.Fatalf("Stored: %+v, want a at %v and b after %v", got, old, before)
	}
}
