package supervisor

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// refKey begins a spec's certificate ref in its canonical form
// (protocol.JobSpec.MarshalJSON): the 64 hex digits of its digest follow.
// No other bytes of a canonical spec can match it (the key is written
// once, and base64 and decimal values hold no quotes), so a frozen spec's
// ref is found without parsing it, which for an inline artifact would
// decode up to 48 MiB.
var refKey = []byte(`"artifact_ref":{"sha256":"`)

// specRef is the digest of the certificate a frozen spec names by
// reference, hex, or "".
func specRef(spec []byte) string {
	i := bytes.Index(spec, refKey)
	if i < 0 || len(spec) < i+len(refKey)+64 {
		return ""
	}
	h := string(spec[i+len(refKey) : i+len(refKey)+64])
	if _, err := hex.DecodeString(h); err != nil {
		return ""
	}
	return h
}

// refsOf is the set of certificates the verify jobs among ids name.
func refsOf(tx store.Tx, jobs []RemovedJob, ops map[string]string) (map[string]bool, error) {
	refs := map[string]bool{}
	for _, j := range jobs {
		if ops[j.ID] != string(protocol.OpVerify) {
			continue
		}
		spec, err := tx.Spec(j.ID)
		if err != nil {
			return nil, fmt.Errorf("spec of %s: %w", j.ID, err)
		}
		if h := specRef(spec); h != "" {
			refs[h] = true
		}
	}
	return refs, nil
}

// certificateGrace is the least time a stored certificate no job names is
// kept: a CLI stores a certificate (certstore.Put, which also makes one
// stored before as young as a new one) and then submits the job that
// names it, and a collection in between must not take it.
const certificateGrace = time.Hour

// addUnnamedCandidates adds to refs the stored certificates last stored
// before cutoff, whichever jobs name them: those of a submission that
// failed or was never made are named by no job, and no job's removal
// would ever find them. collectCertificates keeps the ones still named.
func (s *Supervisor) addUnnamedCandidates(refs map[string]bool, cutoff time.Time) error {
	stored, err := s.certs.Stored()
	if err != nil {
		return err
	}
	for _, e := range stored {
		if e.Stored.Before(cutoff) {
			refs[e.SHA256] = true
		}
	}
	return nil
}

// collectCertificates removes the stored certificates of refs that no
// remaining job names: those the removed jobs named, and the unnamed ones
// addUnnamedCandidates found. The jobs are those of the store served and,
// on a shared store, of the home's own store too (the certificates
// directory is the home's, and a home may keep its own jobs beside a
// cluster's: homejobs.go). It holds certsMu, which admission of a job by
// reference holds from its check of the file to its store's write: a job
// admitted meanwhile is among the remaining ones, or waits and finds the
// file gone (invalid_job).
func (s *Supervisor) collectCertificates(ctx context.Context, refs map[string]bool) error {
	if len(refs) == 0 {
		return nil
	}
	s.certsMu.Lock()
	defer s.certsMu.Unlock()
	err := s.view(ctx, "the certificates still named", func(tx store.Tx) error {
		return keepNamed(tx, refs)
	})
	if err == nil && s.home != nil && s.home.shared && len(refs) > 0 {
		err = s.home.bolt.View(ctx, func(tx store.Tx) error { return keepNamed(tx, refs) })
	}
	if err != nil {
		return err
	}
	for h := range refs {
		var ref protocol.CertificateRef
		hex.Decode(ref.SHA256[:], []byte(h))
		if err := s.certs.Remove(ref); err != nil {
			return err
		}
		s.log.Info("gc: stored certificate removed", "sha256", h)
	}
	return nil
}

// keepNamed deletes from refs every certificate a verify job of tx names.
func keepNamed(tx store.Tx, refs map[string]bool) error {
	var err error
	ferr := tx.ForEachJob(func(j *store.Job) bool {
		if j.Operation != string(protocol.OpVerify) {
			return true
		}
		var spec []byte
		if spec, err = tx.Spec(j.ID); err != nil {
			err = fmt.Errorf("spec of %s: %w", j.ID, err)
			return false
		}
		delete(refs, specRef(spec))
		return len(refs) > 0
	})
	if err != nil {
		return err
	}
	return ferr
}
