package supervisor

import (
	"bytes"

	"github.com/cyberia-to/cyber-supervisor/artifacts"
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// keepArtifact makes the attempt's sandbox on the host's disk (sb, made
// now if it was not) hold the verified artifact, before acceptance is
// recorded (a crash in between
// leaves an unclaimed sandbox, removed at the next start, never an
// accepted job without its artifact):
//
//   - a jailed worker wrote it to its own tmpfs (work): the node publishes
//     the bytes it verified into keep, its own file (0600), so nothing the
//     worker made, and nothing it changes after the verification, is kept;
//   - an unisolated worker wrote it to keep itself: keep is stripped of
//     everything but plain files and directories, which become the
//     supervisor's, 0600/0700, without extended attributes, and the
//     artifact is replaced by the bytes verified.
func (s *Supervisor) keepArtifact(sb *attemptSandbox, work *artifacts.Dir, ref *protocol.ArtifactRef, verified []byte) *protocol.Error {
	if ref == nil {
		return nil
	}
	unisolated := sb.is(work)
	keep, err := sb.open()
	if err != nil {
		return protocol.Errorf(protocol.CodeIOError, "create sandbox: %v", err)
	}
	var opts []artifacts.Option
	if unisolated {
		if st, err := keep.Strip(); err != nil {
			return protocol.Errorf(protocol.CodeIOError, "clean the sandbox for keeping: %v", err)
		} else if st.Removed+st.Modes+st.Owners+st.Xattrs > 0 {
			s.log.Warn("worker left more than plain files in its sandbox", "dir", keep.Path(),
				"removed", st.Removed, "modes", st.Modes, "owners", st.Owners, "xattrs", st.Xattrs)
		}
		opts = append(opts, artifacts.Replace())
	}
	if _, err := keep.Publish(ref.Name, bytes.NewReader(verified), int64(len(verified)), opts...); err != nil {
		return protocol.Errorf(protocol.CodeIOError, "keep the verified artifact: %v", err)
	}
	return nil
}
