package main

import (
	"errors"
	"io"
	"os"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/internal/certprofile"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor"
	"github.com/cyberia-to/cyber-supervisor/supervisor/certstore"
)

// inlineArtifactBytes is the largest certificate run and submit send
// inline, in the spec, unless told otherwise (--artifact-by-ref); a
// larger one is stored in the home's certificate store and named by
// reference (docs/protocol.md §2.3). It is the default artifact limit,
// the largest certificate the spec's 48 MiB was made to carry: inline is
// what every client and daemon understands, and its cost is measured and
// bounded up to there (docs/supervisor.md, "A verify job's artifact
// inline"); past it the spec cannot carry the certificate at all.
const inlineArtifactBytes = protocol.DefaultArtifactBytes

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
// decompressing only its first bytes.
func fileProfile(r io.Reader, size int64) (string, error) {
	return artifactProfile(certprofile.DetectReader(r, size))
}

// artifactProfile is the profile certprofile detected in --artifact, or
// its error in the flag's terms, inline or from a file alike.
func artifactProfile(p string, err error) (string, error) {
	var pe *protocol.Error
	switch {
	case err == nil:
		return p, nil
	case errors.As(err, &pe):
		return "", prefixErr("--artifact", pe)
	case errors.Is(err, artifacts.ErrTooLarge):
		return "", protocol.Errorf(protocol.CodeArtifactTooLarge, "--artifact: the certificate decompresses beyond 1 GiB")
	}
	return "", protocol.Errorf(protocol.CodeProofRejected, "--artifact: the certificate is not a valid zstd frame")
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
