package supervisor

import (
	"io"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// keeping makes the attempt's sandbox on the host's disk (sb, made now
// if it was not) hold the verified artifact: the bytes the node verifies
// are copied into a temporary file of the sandbox as they are read
// (begin), which becomes the artifact only once the acceptance's checks
// passed (commit), before acceptance is recorded (a crash in between
// leaves an unclaimed sandbox, removed at the next start, never an
// accepted job without its artifact); a failed check discards it
// (abort):
//
//   - a jailed worker wrote it to its own work dir (work): the node
//     publishes the bytes it verified into the sandbox, its own file
//     (0600), so nothing the worker made, and nothing it changes after
//     the verification, is kept;
//   - an unisolated worker wrote it to the sandbox itself: the sandbox is
//     stripped of everything but plain files and directories, which
//     become the supervisor's, 0600/0700, without extended attributes,
//     and the artifact is replaced by the bytes verified;
//   - the supervisor wrote it into the sandbox itself (ours: a jailed
//     worker's certificate collected from its stream, which the worker
//     can neither reach nor change): that file is kept as it is, the
//     verification having read it, and nothing is copied, so that a
//     certificate of GiBs is not written to disk twice.
//
// Its failures are the node's (io_error; the attempt fails), not the
// certificate's.
type keeping struct {
	s    *Supervisor
	sb   *attemptSandbox
	work *artifacts.Dir
	// ours: work is sb's dir and its artifact is the supervisor's own
	// file, written there by the supervisor (see above).
	ours bool
	w    *artifacts.Writer
	err  *protocol.Error
}

// begin starts keeping the artifact name, at most limit bytes: what is
// written to the returned writer is kept if commit is called.
func (k *keeping) begin(name string, limit int64) (io.Writer, *protocol.Error) {
	if k == nil || (k.ours && k.sb.is(k.work)) {
		return io.Discard, nil
	}
	unisolated := k.sb.is(k.work)
	keep, err := k.sb.open()
	if err != nil {
		return nil, k.fail(protocol.Errorf(protocol.CodeIOError, "create sandbox: %v", err))
	}
	var opts []artifacts.Option
	if unisolated {
		if st, err := keep.Strip(); err != nil {
			return nil, k.fail(protocol.Errorf(protocol.CodeIOError, "clean the sandbox for keeping: %v", err))
		} else if st.Removed+st.Modes+st.Owners+st.Xattrs > 0 {
			k.s.log.Warn("worker left more than plain files in its sandbox", "dir", keep.Path(),
				"removed", st.Removed, "modes", st.Modes, "owners", st.Owners, "xattrs", st.Xattrs)
		}
		opts = append(opts, artifacts.Replace())
	}
	w, err := keep.Create(name, limit, opts...)
	if err != nil {
		return nil, k.fail(protocol.Errorf(protocol.CodeIOError, "keep the verified artifact: %v", err))
	}
	k.w = w
	return &keptCopy{k: k}, nil
}

// keptCopy writes to the kept artifact; a failure is the node's.
type keptCopy struct{ k *keeping }

func (c *keptCopy) Write(p []byte) (int, error) {
	n, err := c.k.w.Write(p)
	if err != nil {
		c.k.fail(protocol.Errorf(protocol.CodeIOError, "keep the verified artifact: %v", err))
	}
	return n, err
}

func (k *keeping) fail(perr *protocol.Error) *protocol.Error {
	if k.err == nil {
		k.err = perr
	}
	return k.err
}

// commit makes the copy the sandbox's artifact.
func (k *keeping) commit() *protocol.Error {
	if k == nil || k.w == nil {
		return nil
	}
	if _, err := k.w.Commit(); err != nil {
		return protocol.Errorf(protocol.CodeIOError, "keep the verified artifact: %v", err)
	}
	return nil
}

// abort discards the copy.
func (k *keeping) abort() {
	if k != nil && k.w != nil {
		k.w.Abort()
	}
}
