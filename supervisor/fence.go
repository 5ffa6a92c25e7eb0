package supervisor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/hostact"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// openFencing makes the home's dispatch engine: the neuron's key from
// <home>/vault (when it was initialised), the host acts, this boot.
func (s *Supervisor) openFencing() error {
	acts := s.cfg.Acts
	if acts == nil {
		em, err := hostact.OpenEmitter(hostact.EffectsDir(s.cfg.Home))
		if err != nil {
			return err
		}
		if em.Torn > 0 {
			s.log.Warn("emit.jsonl ended in an incomplete line; it was cut", "bytes", em.Torn)
		}
		s.emitter = em
		acts = hostact.NewRegistry()
		if err := hostact.Builtins(acts, em); err != nil {
			return err
		}
	}
	// The neuron and its host acts are the home's: on a store shared by
	// several hosts they stay in the home's own (docs/cluster.md). Its
	// trust is the shared store's too (Config.Trust): the key the engine
	// sets checks the job claims this host signs into either.
	st := s.home.fencing
	e, err := fencing.New(fencing.Config{Store: st, Trust: s.home.bolt.Trust(), Vault: neuron.OpenVault(neuron.VaultDir(s.cfg.Home)), Acts: acts,
		Boot: s.ident().boot, Version: s.cfg.Version, DeviceID: deviceID(), Logger: s.log,
		// A claimed act gets the shutdown's grace to finish.
		ActGrace: s.cfg.ShutdownGrace})
	if err != nil {
		return err
	}
	s.fence = e
	return nil
}

// DeviceID is the machine's id (fencing evidence only), or "".
func DeviceID() string { return deviceID() }

// deviceID is the machine's id (fencing evidence only), or "" to let the
// engine say unknown.
func deviceID() string {
	b, err := os.ReadFile("/etc/machine-id")
	if v := strings.TrimSpace(string(b)); err == nil && protocol.ValidText(v) && !strings.Contains(v, " ") {
		return v
	}
	return ""
}

// bindBoot binds this boot's embedded host-act worker: every boot gets a
// generation of its own, so it never inherits the previous one's lease,
// and job attempts prepared from now on carry it.
func (s *Supervisor) bindBoot(ctx context.Context) {
	if !s.fence.HasNeuron() {
		return
	}
	r, err := s.fence.BindBoot(ctx)
	if err != nil {
		s.log.Warn("the embedded host-act worker is not bound: acts are not dispatched until it is", "err", err)
		return
	}
	s.log.Info("embedded host-act worker bound", "generation", r.Generation, "boot", s.ident().boot)
}

// Fencing is the home's dispatch engine.
func (s *Supervisor) Fencing() *fencing.Engine { return s.fence }

// placement is the generation and network a job attempt is prepared in:
// the home's placement (its neuron's root), or on a store shared by
// several hosts this boot's cluster registration and the home's network.
func (s *Supervisor) placement(tx store.Tx) (uint64, string, error) {
	if !s.home.shared {
		// The job store is the home's own file, whose transactions hold
		// its neuron root as well: the generation read is the one the
		// attempt commits with.
		ltx, ok := txAs[store.LocalTx](tx)
		if !ok {
			return 0, "", fmt.Errorf("placement: %w: a local job transaction without the home's fencing records", store.ErrInvariant)
		}
		return generation(ltx)
	}
	network := "local"
	err := s.home.local.View(context.Background(), func(ltx store.LocalTx) error {
		_, n, err := generation(ltx)
		network = n
		return err
	})
	return s.txIdent(tx).gen, network, err
}

// generation is the current placement generation (0 without a neuron).
func generation(tx store.NeuronTx) (uint64, string, error) {
	r, err := tx.Root()
	switch {
	case errors.Is(err, store.ErrNotFound):
		return 0, "local", nil
	case err != nil:
		return 0, "", err
	}
	return r.Generation, r.Network, nil
}

// jobClaim is the claim of a job attempt, made with the attempt (inside
// its transaction) and so durable before its worker is given the job:
// its generation, and the descriptor of the worker process it goes to
// (a job worker takes no acts, so its argument bound is the largest a
// descriptor can say). Signed by the neuron key when the home has one.
func (s *Supervisor) jobClaim(job *store.Job, at *store.Attempt, network string, now time.Time) (*store.JobClaim, error) {
	backend := protocol.BackendIsolatedProcess
	if s.caps.Backend == protocol.BackendProcess {
		backend = protocol.BackendProcess
	}
	proof := protocol.ProfileNone
	if job.Operation != string(protocol.OpExecute) {
		proof = protocol.ProfilePublicTrace
	}
	version := s.caps.BackendVersion
	if !protocol.ValidText(version) {
		version = s.cfg.Version
	}
	sum := sha256.Sum256([]byte(job.ID + "\x00" + strconv.FormatUint(uint64(at.N), 10)))
	c := &store.JobClaim{Job: job.ID, Attempt: at.N, Generation: at.Generation, Created: now,
		Worker: protocol.WorkerDescriptor{
			Machine: protocol.MachineNox, Environment: protocol.EnvPublicStateless, ProofProfile: proof,
			Network: network,
			Executor: protocol.Executor{Warrior: protocol.WarriorNoxWorker, Version: version, Backend: backend,
				WorkerID: "attempt-" + hex.EncodeToString(sum[:8]), DeviceID: orUnknown(deviceID()), BootID: s.ident().boot},
			MaxArgumentBytes: protocol.MaxArgumentBytesLimit,
		}}
	if s.fence != nil {
		if err := s.fence.SignJobClaim(c); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// placementMoved reports whether the placement generation is no longer
// the one the attempt was prepared (and claimed) in: such an attempt is
// never dispatched.
func (s *Supervisor) placementMoved(ctx context.Context, a *active) (bool, error) {
	if s.cluster != nil {
		// The generation is this boot's registration, and the attempt,
		// write-once, holds the one this boot prepared it in: nothing to
		// read from the shared store (the running transition's commit
		// compares the registration itself). The handle's membership,
		// not s.id: it is what the prepare wrote (txIdent), and s.id
		// takes a new one a moment after the handle when the boot joins
		// again.
		m := s.membership()
		return m == nil || m.HostBoot().Generation != a.gen, nil
	}
	moved := false
	err := s.home.local.View(ctx, func(tx store.LocalTx) error {
		at, err := tx.Attempt(a.job.ID, a.n)
		if err != nil {
			return err
		}
		gen, _, err := s.placement(tx)
		moved = gen != at.Generation
		return err
	})
	return moved, err
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown-device"
	}
	return s
}

// BindBoot binds this boot's embedded worker (after neuron init through
// the API: the daemon then has a worker at once).
func (s *Supervisor) BindBoot(ctx context.Context) { s.bindBoot(ctx) }

// RunAll drives every live invocation once more (after a grant, a bind
// or a resume may have let waiting ones go on).
func (s *Supervisor) RunAll() {
	go func() {
		invs, err := s.fence.Invocations(context.Background())
		if err != nil {
			return
		}
		for _, inv := range invs {
			if !inv.Status.Terminal() {
				s.drivers.kick(inv.ID)
			}
		}
	}()
}
