// Package certprofile is what the worker, the supervisor and the CLIs
// share about the two certificate profiles (cyber-nox-public-trace-v1
// and -v2, docs/certificate.md): how long a v2 certificate of a budget
// may be, how a job's compressed certificate is opened as the stream of
// its content under its profile's rules, and which profile a
// certificate's magic names. noxrunner/cert reads either profile by its
// magic; a job names exactly one, and this package keeps the other out.
package certprofile

import (
	"bytes"
	"fmt"
	"io"
	"math"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/cert"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// MaxEncodedV2 is the longest v2 certificate a run under budget can
// have (cert.MaxEncodedV2For: the longest header, MaxStepBytes per
// reduction and the longest trailer), at most MaxInt64, for the int64
// limits of the artifacts package. Unlike v1's (cert.MaxEncodedFor) it is
// not capped by a fixed figure: a v2 certificate is proved and verified
// streamed, so only the budget and the job's artifact limit (its
// compressed bytes) bound it.
func MaxEncodedV2(budget uint64) uint64 {
	return min(cert.MaxEncodedV2For(budget), math.MaxInt64)
}

// Magic is the magic a certificate of profile starts with.
func Magic(profile string) string {
	if profile == protocol.ProfilePublicTraceV2 {
		return cert.MagicV2
	}
	return cert.Magic
}

// Certificate is a job's compressed certificate opened as the stream of
// its content.
type Certificate struct {
	io.Reader
	// Size is what to hand cert.VerifyFrom: the declared content size,
	// or -1 (a v2 frame that declares none).
	Size int64
	// Window is the decoder's history (artifacts.Decompressor.Window).
	Window int64
	d      *artifacts.Decompressor
}

// Close releases the decoder.
func (c *Certificate) Close() error { return c.d.Close() }

// Open opens a job's compressed certificate of profile, within limit
// bytes of content: a v1 certificate must declare its size
// (artifacts.NewDecompressor), a v2 one may not
// (artifacts.NewStreamDecompressor, bounded as it is read). Its stream
// refuses, at its first bytes, a certificate whose magic is the other
// profile's (cert.ErrMismatch): no profile stands in for another. Other
// first bytes are left to the verifier to reject.
func Open(profile string, artifact []byte, limit int64) (*Certificate, error) {
	var (
		d   *artifacts.Decompressor
		err error
	)
	if profile == protocol.ProfilePublicTraceV2 {
		d, err = artifacts.NewStreamDecompressor(artifact, limit)
	} else {
		d, err = artifacts.NewDecompressor(artifact, limit)
	}
	if err != nil {
		return nil, err
	}
	return opened(profile, d), nil
}

// OpenStatement is Open of only as much of the certificate as
// cert.ReadStatementFrom reads (its statement and the reader's window
// past it: cert.StreamBytes, at most StatementPrefix): its decoder keeps
// a window of that prefix and a block (512 KiB), not the frame's (up to
// 8 MiB, allocated and cleared at the first block), so that reading a
// long certificate's statement costs what the statement does.
func OpenStatement(profile string, artifact []byte, limit int64) (*Certificate, error) {
	var (
		d   *artifacts.Decompressor
		err error
	)
	if profile == protocol.ProfilePublicTraceV2 {
		d, err = artifacts.NewStreamDecompressorPrefix(artifact, limit, StatementPrefix)
	} else {
		d, err = artifacts.NewDecompressorPrefix(artifact, limit, StatementPrefix)
	}
	if err != nil {
		return nil, err
	}
	return opened(profile, d), nil
}

// StatementPrefix is the content OpenStatement delivers: at least what
// cert.ReadStatementFrom reads, the longest statement and its reader's
// window (cert.StreamBytes, 143,070 bytes).
const StatementPrefix = 256 << 10

// The prefix must hold what the statement's reader reads.
var _ = [StatementPrefix - cert.StreamBytes]struct{}{}

// OpenReader is Open of a compressed certificate of n bytes read from r
// as it is decompressed (artifacts.NewDecompressorFrom): a certificate
// on disk is verified without being held, whatever its size.
func OpenReader(profile string, r io.Reader, n, limit int64) (*Certificate, error) {
	var (
		d   *artifacts.Decompressor
		err error
	)
	if profile == protocol.ProfilePublicTraceV2 {
		d, err = artifacts.NewStreamDecompressorFrom(r, n, limit)
	} else {
		d, err = artifacts.NewDecompressorFrom(r, n, limit)
	}
	if err != nil {
		return nil, err
	}
	return opened(profile, d), nil
}

func opened(profile string, d *artifacts.Decompressor) *Certificate {
	r := &profileReader{r: d, want: Magic(profile), profile: profile}
	return &Certificate{Reader: r, Size: d.Size(), Window: d.Window(), d: d}
}

// profileReader passes a certificate's content through once its first
// bytes have been found not to be another profile's magic.
type profileReader struct {
	r       io.Reader
	want    string
	profile string
	head    []byte // the magic, read ahead and not yet passed on
	checked bool
}

func (p *profileReader) Read(b []byte) (int, error) {
	if !p.checked {
		p.checked = true
		head := make([]byte, len(p.want))
		n, err := io.ReadFull(p.r, head)
		if n == len(head) && string(head) != p.want && (string(head) == cert.Magic || string(head) == cert.MagicV2) {
			return 0, fmt.Errorf("%w: the certificate is of another profile than the job's %s (it starts %q)", cert.ErrMismatch, p.profile, head)
		}
		if err != nil && n < len(head) {
			// Too short for a magic: the verifier says what is wrong.
			p.r = io.MultiReader(bytes.NewReader(head[:n]), p.r)
		} else {
			p.head = head
		}
	}
	if len(p.head) > 0 {
		n := copy(b, p.head)
		p.head = p.head[n:]
		return n, nil
	}
	return p.r.Read(b)
}

// Detect says which of the two profiles a compressed certificate claims,
// by its magic; nothing in it is verified. It is for tools that take a
// certificate without a job (nox-worker verify, cyber-supervisor run --op
// verify) and build the job from it: that job then names exactly this
// profile, and the verification checks the certificate under it. Errors
// are the artifacts package's (a frame that is not one, a declared size
// over 1 GiB) or a *protocol.Error (proof_rejected: no known magic).
func Detect(artifact []byte) (string, error) {
	d, err := artifacts.NewStreamDecompressor(artifact, math.MaxInt64)
	if err != nil {
		return "", err
	}
	return detect(d)
}

// DetectReader is Detect of a certificate of n bytes read from r (a file
// too large to hold); it reads only what the magic needs.
func DetectReader(r io.Reader, n int64) (string, error) {
	d, err := artifacts.NewStreamDecompressorFrom(r, n, math.MaxInt64)
	if err != nil {
		return "", err
	}
	return detect(d)
}

// detect reads the magic d's content starts with.
func detect(d *artifacts.Decompressor) (string, error) {
	defer d.Close()
	head := make([]byte, len(cert.Magic))
	if _, err := io.ReadFull(d, head); err != nil {
		return "", protocol.Errorf(protocol.CodeProofRejected, "the certificate is too short to name its profile")
	}
	switch string(head) {
	case cert.Magic:
		return protocol.ProfilePublicTrace, nil
	case cert.MagicV2:
		return protocol.ProfilePublicTraceV2, nil
	}
	return "", protocol.Errorf(protocol.CodeProofRejected, "the certificate starts with no known magic")
}
