package supervisor

import (
	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// warmCodecs builds what the attempt's critical path would otherwise
// build on first use: the codecs of the worker's connection (when the
// launcher has one) and those of the result's JSON. A one-shot run calls
// it once its job is recorded, while its worker is still starting: the
// supervisor has nothing else to do until the handshake, and after it
// these would cost ~0.5 ms between the handshake and the result's
// acceptance.
func (s *Supervisor) warmCodecs() {
	if w, ok := s.cfg.Launcher.(interface{ WarmCodecs() }); ok {
		w.WarmCodecs()
	}
	protocol.WarmResultJSON()
}
