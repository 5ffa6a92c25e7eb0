package cert

import (
	"context"
	"errors"
	"io"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// ProfileV2 is the exact profile id of the streamed certificate
// (docs/certificate.md): the statement's header (program, inputs,
// budget) first, the witness as the run goes, and the run's outputs,
// reductions and call count in a trailer, over a node table that prover
// and verifier both collect at the same points.
const ProfileV2 = "cyber-nox-public-trace-v2"

// MagicV2 starts every v2 certificate.
const MagicV2 = "CYNXTRC2"

// ProveTo runs and certifies like Prove, writing the v2 certificate to w
// as the run goes (w is typically a zstd encoder over the artifact file).
// Run.Certificate is nil. Memory: bounded whatever the length of the run
// (the node table is collected, the witness is streamed).
// opt.MaxBytes bounds the bytes written (0: unbounded).
func ProveTo(ctx context.Context, w io.Writer, program noun.Noun, inputs []uint64, budget uint64, opt ProveOptions) (*Run, error) {
	return nil, errors.New("cert: ProveTo is not implemented yet")
}
