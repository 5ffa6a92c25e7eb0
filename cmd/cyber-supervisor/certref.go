package main

import (
	"errors"
	"io"
	"math"
	"os"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/certstore"
)

// inlineArtifactBytes is the largest certificate run and submit send
// inline, in the spec; a larger one is stored in the home's certificate
// store and named by reference (docs/protocol.md §2.3). Inline, a
// certificate is copied a few times over by the daemon (the request, the
// decoded bytes, the canonical form, the store's record: about A + 2S,
// docs/design/inline-artifact.md) and is bounded by the spec's 48 MiB;
// by reference it is written once to the home's disk, streamed, and the
// spec stays small. 1 MiB is where a spec's copies start to be collected
// eagerly (supervisor.largeSpec): below it inline costs nothing worth
// the store's file.
const inlineArtifactBytes = 1 << 20

// storeCertificate stores the certificate at path (at most limit bytes)
// in the home's store, streamed, and returns its ref and profile (the
// certificate's own, from its magic).
func storeCertificate(homeFlag, path string, limit int64) (*protocol.CertificateRef, string, error) {
	f, _, err := protocol.OpenLocalFile("certificate", path, limit, protocol.CodeArtifactTooLarge)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	home, err := supervisor.ResolveHome(homeFlag)
	if err != nil {
		return nil, "", protocol.Errorf(protocol.CodeIOError, "store the certificate: %v", err)
	}
	store, err := certstore.Open(home)
	if err != nil {
		return nil, "", protocol.Errorf(protocol.CodeIOError, "store the certificate: %v", err)
	}
	defer store.Close()
	ref, err := store.PutFile(f, uint64(limit))
	var pe *protocol.Error
	switch {
	case errors.As(err, &pe):
		return nil, "", prefixErr("--artifact", pe)
	case err != nil:
		return nil, "", protocol.Errorf(protocol.CodeIOError, "--artifact: store the certificate in %s: %v", certstore.Path(home), err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, "", protocol.Errorf(protocol.CodeIOError, "--artifact: rewind %s: %v", path, err)
	}
	profile, err := fileProfile(f, int64(ref.Size))
	if err != nil {
		return nil, "", err
	}
	return &ref, profile, nil
}

// fileProfile is the profile a certificate file names by its magic,
// decompressing only its first bytes (certprofile.Detect of a file).
func fileProfile(r io.Reader, size int64) (string, error) {
	d, err := artifacts.NewStreamDecompressorFrom(r, size, math.MaxInt64)
	if err != nil {
		return "", protocol.Errorf(protocol.CodeProofRejected, "--artifact: the certificate is not a valid zstd frame")
	}
	defer d.Close()
	head := make([]byte, len(cert.Magic))
	if _, err := io.ReadFull(d, head); err != nil {
		return "", protocol.Errorf(protocol.CodeProofRejected, "--artifact: the certificate is too short to name its profile")
	}
	switch string(head) {
	case cert.Magic:
		return protocol.ProfilePublicTrace, nil
	case cert.MagicV2:
		return protocol.ProfilePublicTraceV2, nil
	}
	return "", protocol.Errorf(protocol.CodeProofRejected, "--artifact: the certificate starts with no known magic")
}

// artifactSize is the size of the file at path, or -1 when it cannot be
// told (the read that follows reports why).
func artifactSize(path string) int64 {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return -1
	}
	return st.Size()
}
