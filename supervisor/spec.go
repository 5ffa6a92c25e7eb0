package supervisor

import (
	"context"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// Spec is the job's frozen spec: the canonical contract JSON it was
// admitted with (its digest is the job's SpecDigest). The dashboard's
// job page shows it in summary.
func (s *Supervisor) Spec(ctx context.Context, id string) ([]byte, error) {
	var spec []byte
	err := s.view(ctx, "spec of job "+protocol.QuotePrefix(id), func(tx store.Tx) error {
		if _, err := tx.Job(id); err != nil {
			return unknownJob(tx, id, err)
		}
		var err error
		spec, err = tx.Spec(id)
		return err
	})
	return spec, err
}
