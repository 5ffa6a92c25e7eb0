package fencing

import (
	"sync"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
)

// The nine acceptance scenarios of the local worker dispatch and fencing
// contract (docs/fencing.md, "Acceptance"). Each asserts whether the act
// ran (a counting act) and what the records say.

// Scenario 1: a token is prepared (the attempt is recorded), then the
// grant is revoked — disabled, or replaced without the act. Dispatch is
// denied before any claim; the act never runs; the attempt stays
// recorded and unknown, and no new token is ever made for it.
func TestScenarioRevokeAfterAttemptBeforeClaim(t *testing.T) {
	for _, revoke := range []string{"disabled", "replaced without the act"} {
		t.Run(revoke, func(t *testing.T) {
			h := newHarness(t)
			h.grant(tagCount)
			h.bind()
			p := h.install(callOnInput(tagCount), tagCount)
			inv := h.invoke(p, 7)
			op := h.awaiting(inv)
			tok, err := h.e.Prepare(ctx, inv.ID)
			h.must(err)
			g, _ := h.e.Grant(ctx)
			if revoke == "disabled" {
				_, err = h.e.SetGrant(ctx, g.Revision, GrantSpec{Acts: []uint64{tagCount}, Disabled: true})
			} else {
				_, err = h.e.SetGrant(ctx, g.Revision, GrantSpec{Acts: []uint64{tagHost}})
			}
			h.must(err)
			_, err = h.e.Dispatch(ctx, tok)
			wantRefusal(t, "dispatch after the revocation", err, Denied)
			wantCalls(t, "after a revoked dispatch", h.count, 0)
			if h.claimOf(op.ID, 1) != nil {
				t.Fatal("a claim was recorded for a revoked dispatch")
			}
			v := h.view(inv.ID)
			if len(v.Operations) != 1 || len(v.Operations[0].Attempts) != 1 || !v.Operations[0].Attempts[0].Unknown {
				t.Fatalf("the attempt is not recorded as unknown: %+v", v.Operations)
			}
			// Re-granting does not make a new token: the attempt needs
			// reconciliation.
			h.grant(tagCount)
			_, err = h.e.Prepare(ctx, inv.ID)
			wantRefusal(t, "prepare again", err, UnknownOutcome)
			_, err = h.e.Dispatch(ctx, tok)
			wantRefusal(t, "the consumed token again", err, UnknownOutcome)
			_, err = h.e.Drive(ctx, inv.ID)
			wantRefusal(t, "drive", err, UnknownOutcome)
			wantCalls(t, "in the end", h.count, 0)
		})
	}
}

// Scenario 2: boot 1 prepares a token; boot 2 binds (generation +1).
// Boot 1's dispatch is fenced; no claim; the act never runs. The old
// attempt stays attached to its executor and generation and must be
// reconciled.
func TestScenarioOldBootAfterReplacement(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	r1 := h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	inv := h.invoke(p, 7)
	op := h.awaiting(inv)
	tok, err := h.e.Prepare(ctx, inv.ID)
	h.must(err)
	boot2 := h.engine("boot-2")
	r2, err := boot2.BindBoot(ctx)
	h.must(err)
	if r2.Generation != r1.Generation+1 || r2.Worker.Executor.BootID != "boot-2" {
		t.Fatalf("boot 2 bound %+v", r2)
	}
	_, err = h.e.Dispatch(ctx, tok)
	wantRefusal(t, "boot 1's dispatch", err, Fenced)
	wantCalls(t, "after the fenced dispatch", h.count, 0)
	if h.claimOf(op.ID, 1) != nil {
		t.Fatal("a claim was recorded for a fenced dispatch")
	}
	v := h.view(inv.ID)
	a := v.Operations[0].Attempts[0]
	if a.Generation != r1.Generation || a.Worker.Executor.BootID != h.e.Boot() || !a.Unknown {
		t.Fatalf("the old attempt: generation %d boot %s unknown %v", a.Generation, a.Worker.Executor.BootID, a.Unknown)
	}
	// Boot 2 cannot take over the old attempt either.
	_, err = boot2.Prepare(ctx, inv.ID)
	wantRefusal(t, "boot 2 prepares the old attempt", err, UnknownOutcome)
	_, err = boot2.Drive(ctx, inv.ID)
	wantRefusal(t, "boot 2 drives", err, UnknownOutcome)
	// A token of boot 1 is not boot 2's to dispatch.
	_, err = boot2.Dispatch(ctx, tok)
	wantRefusal(t, "boot 2 dispatches boot 1's token", err, Fenced)
	_, recorded, err := boot2.Reconcile(ctx, op.ID, 1, OutcomeSpec{Value: noun.Atom(7)})
	h.must(err)
	if !recorded {
		t.Fatal("the reconciliation was not recorded")
	}
	got, err := boot2.Drive(ctx, inv.ID)
	h.must(err)
	if got.Status != store.InvocationCompleted || atomOf(t, got.Result) != 7 {
		t.Fatalf("after reconcile: %s %v", got.Status, got.Error)
	}
	wantCalls(t, "in the end", h.count, 0)
}

// Scenario 3: two binds on one generation: one wins, the other is a
// conflict. Two dispatches of one attempt that both pass the read-only
// preflight: one claim, one act call.
func TestScenarioTwoWorkersRacing(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	r, err := h.e.Root(ctx)
	h.must(err)
	a, b := h.engine("boot-a"), h.engine("boot-b")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i, e := range []*Engine{a, b} {
		wg.Add(1)
		go func() { defer wg.Done(); _, errs[i] = e.Bind(ctx, r.Generation) }()
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			wantRefusal(t, "the losing bind", err, Conflict)
		}
	}
	if won != 1 {
		t.Fatalf("%d binds won on generation %d", won, r.Generation)
	}
	// Two dispatches of one attempt both pass the preflight (the checks
	// before the claim's transaction); the claim decides.
	h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	inv := h.invoke(p, 7)
	op := h.awaiting(inv)
	tok, err := h.e.Prepare(ctx, inv.ID)
	h.must(err)
	meta := tok.Metadata()
	h.count.set("block")
	h.count.gate = make(chan struct{})
	h.count.entered = make(chan struct{}, 2)
	results := make(chan error, 2)
	for range 2 {
		go func() {
			// Each racer holds its own permit of the same attempt, as
			// two workers that both got through preparation would.
			_, err := h.e.dispatch(ctx, meta)
			results <- err
		}()
	}
	// The winner is inside the act, holding it; the loser's claim is
	// refused meanwhile.
	<-h.count.entered
	wantRefusal(t, "the losing dispatch", <-results, UnknownOutcome)
	close(h.count.gate)
	if err := <-results; err != nil {
		t.Fatalf("the winning dispatch: %v", err)
	}
	wantCalls(t, "two racing dispatches", h.count, 1)
	if h.claimOf(op.ID, 1) == nil {
		t.Fatal("no claim")
	}
}

// Scenario 4: an unsupported profile is refused at bind, a descriptor of
// another network is denied at bind (the generation does not move), and
// a vault whose key is not the neuron's is denied — all before any act
// runs.
func TestScenarioWrongSubjectNetworkProfile(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	r0, err := h.e.Root(ctx)
	h.must(err)
	good := h.e.Descriptor("testnet")
	for name, edit := range map[string]func(*protocol.WorkerDescriptor){
		"proof profile": func(d *protocol.WorkerDescriptor) { d.ProofProfile = protocol.ProfilePublicTrace },
		"machine":       func(d *protocol.WorkerDescriptor) { d.Machine = protocol.MachineNox },
		"environment":   func(d *protocol.WorkerDescriptor) { d.Environment = protocol.EnvPublicStateless },
		"backend":       func(d *protocol.WorkerDescriptor) { d.Executor.Backend = protocol.BackendIsolatedProcess },
	} {
		d := good
		edit(&d)
		_, err := h.e.BindWorker(ctx, r0.Generation, d)
		wantRefusal(t, "bind with another "+name, err, Unsupported)
	}
	other := good
	other.Network = "othernet"
	_, err = h.e.BindWorker(ctx, r0.Generation, other)
	wantRefusal(t, "bind for another network", err, Denied)
	if r, _ := h.e.Root(ctx); r.Generation != r0.Generation {
		t.Fatalf("a refused bind moved the generation to %d", r.Generation)
	}
	// The tokens of a worker bound for the neuron cannot be used with a
	// vault holding another neuron's key.
	h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	inv := h.invoke(p, 7)
	h.awaiting(inv)
	h.must(h.st.Close())
	stranger := t.TempDir()
	if _, err := neuron.OpenVault(neuron.VaultDir(stranger)).Init(); err != nil {
		t.Fatal(err)
	}
	st, err := bolt.Open(h.home+"/store", 0)
	h.must(err)
	defer st.Close()
	e, err := New(Config{Store: st.Fencing(), Trust: st.Trust(), Vault: neuron.OpenVault(neuron.VaultDir(stranger)), Acts: h.acts, Boot: "boot-x"})
	h.must(err)
	_, err = e.Root(ctx)
	wantRefusal(t, "a vault of another subject", err, Denied)
	_, err = e.Prepare(ctx, inv.ID)
	wantRefusal(t, "prepare with another subject", err, Denied)
	_, err = e.Drive(ctx, inv.ID)
	wantRefusal(t, "drive with another subject", err, Denied)
	wantCalls(t, "with the wrong subject, network or profile", h.count, 0)
}

// Scenario 5: copying and editing a token's metadata makes no token, and
// the act gets the stored argument (7), not the edited one (999);
// preparing again answers unknown outcome; a consumed token cannot be
// used again; a duplicate claim is refused even after a lost receipt.
func TestScenarioDuplicateMetadataTokenAttempt(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	inv := h.invoke(p, 7)
	op := h.awaiting(inv)
	tok, err := h.e.Prepare(ctx, inv.ID)
	h.must(err)
	meta := tok.Metadata()
	edited := tok.Metadata()
	edited.Arguments = noun.AppendTokens(nil, noun.Atom(999))
	if string(meta.Arguments) == string(edited.Arguments) {
		t.Fatal("Metadata returned a shared slice")
	}
	if string(tok.Metadata().Arguments) != string(noun.AppendTokens(nil, noun.Atom(7))) {
		t.Fatal("editing a copy of the metadata changed the token")
	}
	// Public metadata cannot make a token: the zero token and a token of
	// nothing are refused.
	_, err = h.e.Dispatch(ctx, DispatchToken{})
	wantRefusal(t, "a token made from nothing", err, Fenced)
	_, err = h.e.Prepare(ctx, inv.ID)
	wantRefusal(t, "prepare again", err, UnknownOutcome)
	// An edited permit (as if metadata could be smuggled in) is refused
	// by the stored arguments; the act never sees 999.
	_, err = h.e.dispatch(ctx, edited)
	wantRefusal(t, "dispatch with edited arguments", err, Conflict)
	wantCalls(t, "after the edited dispatch", h.count, 0)
	// The real token dispatches; the act sees the stored 7. Its receipt
	// is lost (it says unknown): the attempt is claimed, without outcome.
	h.count.set("unknown")
	res, err := h.e.Dispatch(ctx, tok)
	h.must(err)
	if res.Outcome != nil {
		t.Fatal("an unknown result was recorded as an outcome")
	}
	if seen := h.count.last; !seen.IsAtom() || seen.Value() != 7 {
		t.Fatalf("the act got %v, want the stored 7", seen)
	}
	copyOfTok := tok
	_, err = h.e.Dispatch(ctx, copyOfTok)
	wantRefusal(t, "a copy of the consumed token", err, UnknownOutcome)
	// A second permit of the same attempt tries again: the claim refuses
	// it, and so does the store for an identical claim record.
	_, err = h.e.dispatch(ctx, meta)
	wantRefusal(t, "a duplicate claim after a lost receipt", err, UnknownOutcome)
	err = h.st.Local().Update(ctx, func(tx store.LocalTx) error { return tx.RecordClaim(h.claimOf(op.ID, 1)) })
	if err == nil {
		t.Fatal("the store took an identical second claim")
	}
	wantCalls(t, "in the end", h.count, 1)
}

// Scenario 6: the act panics after the claim committed. On reopen with
// a new boot: prepare answers unknown outcome, the claim is there, and
// nothing redispatches. The owner records the outcome under the original
// operation and attempt, and the invocation completes.
func TestScenarioCrashAfterClaim(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	inv := h.invoke(p, 7)
	op := h.awaiting(inv)
	h.count.set("panic")
	_, err := h.e.Drive(ctx, inv.ID)
	wantRefusal(t, "drive into a panicking act", err, UnknownOutcome)
	wantCalls(t, "the panicking act", h.count, 1)
	claim := h.claimOf(op.ID, 1)
	if claim == nil {
		t.Fatal("no claim before the act ran")
	}
	h.count.set("")
	h.reopen()
	r := h.bind()
	if r.Worker.Executor.BootID == claim.Worker.Executor.BootID {
		t.Fatal("the new boot inherited the old lease")
	}
	_, err = h.e.Prepare(ctx, inv.ID)
	wantRefusal(t, "prepare after the restart", err, UnknownOutcome)
	_, err = h.e.Drive(ctx, inv.ID)
	wantRefusal(t, "drive after the restart", err, UnknownOutcome)
	wantCalls(t, "after the restart", h.count, 1)
	if h.claimOf(op.ID, 1) == nil {
		t.Fatal("the claim is gone after the restart")
	}
	_, _, err = h.e.Reconcile(ctx, op.ID, 1, OutcomeSpec{Value: noun.Atom(7)})
	h.must(err)
	got, err := h.e.Drive(ctx, inv.ID)
	h.must(err)
	if got.Status != store.InvocationCompleted || atomOf(t, got.Result) != 7 {
		t.Fatalf("after reconciling: %s %v", got.Status, got.Error)
	}
	wantCalls(t, "in the end", h.count, 1)
}

// Scenario 7 (contract.md §4.5 row 7): two unknown attempts; the policy
// changes to a new epoch with a grant of no acts. Rebind while unknown
// is busy. Reconciling needs no act and is idempotent. Rebind is then
// denied (the act is revoked). The first is cancelled and archived; the
// second is reconciled, the act granted again, rebound, and completes
// with the recorded value (9). The original operation and attempt
// evidence never changes.
func TestScenarioOutcomeAfterPolicyChange(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	first, second := h.invoke(p, 7), h.invoke(p, 8)
	h.count.set("unknown")
	var ops []*store.Operation
	for _, inv := range []*store.Invocation{first, second} {
		ops = append(ops, h.awaiting(inv))
		_, err := h.e.Drive(ctx, inv.ID)
		wantRefusal(t, "an act that says unknown", err, UnknownOutcome)
	}
	wantCalls(t, "two unknown attempts", h.count, 2)
	before := []AttemptView{h.view(first.ID).Operations[0].Attempts[0], h.view(second.ID).Operations[0].Attempts[0]}
	r, err := h.e.Root(ctx)
	h.must(err)
	newPolicy := neuron.Particle{9, 9, 9}
	_, err = h.e.ChangePolicy(ctx, newPolicy, r.Epoch+1)
	h.must(err)
	h.grant() // the new policy's grant: no acts
	_, err = h.e.Rebind(ctx, first.ID)
	wantRefusal(t, "rebind while unknown", err, Busy)
	for i := range 2 {
		_, recorded, err := h.e.Reconcile(ctx, ops[0].ID, 1, OutcomeSpec{Value: noun.Atom(5)})
		h.must(err)
		if recorded != (i == 0) {
			t.Fatalf("reconcile %d: recorded=%v", i+1, recorded)
		}
	}
	_, _, err = h.e.Reconcile(ctx, ops[0].ID, 1, OutcomeSpec{Value: noun.Atom(6)})
	wantRefusal(t, "a conflicting reconciliation", err, Conflict)
	_, err = h.e.Rebind(ctx, first.ID)
	wantRefusal(t, "rebind without the act", err, Denied)
	_, err = h.e.Cancel(ctx, first.ID, "")
	h.must(err)
	h.must(h.e.Archive(ctx, first.ID))
	_, err = h.e.Cancel(ctx, second.ID, "")
	wantRefusal(t, "cancel the unknown second", err, UnknownOutcome)
	_, _, err = h.e.Reconcile(ctx, ops[1].ID, 1, OutcomeSpec{Value: noun.Atom(9)})
	h.must(err)
	_, err = h.e.Drive(ctx, second.ID)
	wantRefusal(t, "drive before rebinding", err, Denied)
	h.grant(tagCount)
	rebound, err := h.e.Rebind(ctx, second.ID)
	h.must(err)
	if rebound.Epoch != r.Epoch+1 {
		t.Fatalf("rebound to epoch %d", rebound.Epoch)
	}
	got, err := h.e.Drive(ctx, second.ID)
	h.must(err)
	if got.Status != store.InvocationCompleted || atomOf(t, got.Result) != 9 {
		t.Fatalf("the second: %s %v", got.Status, got.Error)
	}
	a1, a2 := h.view(first.ID), h.view(second.ID)
	if !a1.Archived || a1.Status != store.InvocationCancelled {
		t.Fatalf("the first: archived %v status %s", a1.Archived, a1.Status)
	}
	for i, v := range []*InvocationView{a1, a2} {
		a := v.Operations[0].Attempts[0]
		if string(a.Authorization) != string(before[i].Authorization) || a.Epoch != r.Epoch || a.Policy != r.Policy ||
			v.Operations[0].Epoch != r.Epoch {
			t.Fatalf("attempt %d's evidence changed", i+1)
		}
	}
	wantCalls(t, "in the end", h.count, 2)
}

// Scenario 8: an unknown attempt of an external executor (a manual take:
// generation 0, executor manual-reconciliation/1, no claim) is never
// dispatched by the worker path; only reconciliation resolves it,
// exactly once.
func TestScenarioUnknownLegacyAttempt(t *testing.T) {
	h := newHarness(t)
	h.grant(tagCount)
	h.bind()
	p := h.install(callOnInput(tagCount), tagCount)
	inv := h.invoke(p, 7)
	op := h.awaiting(inv)
	a, err := h.e.Take(ctx, inv.ID)
	h.must(err)
	if a.Generation != 0 || a.Executor != store.ExecutorManual || a.Worker != nil {
		t.Fatalf("the take: %+v", a)
	}
	_, err = h.e.Take(ctx, inv.ID)
	wantRefusal(t, "a second take", err, UnknownOutcome)
	_, err = h.e.Prepare(ctx, inv.ID)
	wantRefusal(t, "prepare a taken operation", err, UnknownOutcome)
	_, err = h.e.Drive(ctx, inv.ID)
	wantRefusal(t, "drive a taken operation", err, UnknownOutcome)
	// Even a hand-made permit for it cannot enter the embedded executor.
	forged := Dispatch{Neuron: op.Neuron, Network: op.Network, Prog: op.Prog, Invocation: op.Invocation, Operation: op.ID,
		Attempt: 1, Policy: op.Policy, Epoch: op.Epoch, Tag: op.Tag, Arguments: op.Argument, Authorization: a.Authorization,
		Executor: h.e.Descriptor("testnet"), Generation: 0}
	_, err = h.e.dispatch(ctx, forged)
	wantRefusal(t, "dispatching generation 0", err, Fenced)
	root, _ := h.e.Root(ctx)
	forged.Generation = root.Generation
	_, err = h.e.dispatch(ctx, forged)
	wantRefusal(t, "dispatching a manual attempt", err, Conflict)
	if h.claimOf(op.ID, 1) != nil {
		t.Fatal("a manual attempt got a claim")
	}
	wantCalls(t, "a manual take", h.count, 0)
	_, recorded, err := h.e.Reconcile(ctx, op.ID, 1, OutcomeSpec{Value: noun.Atom(11)})
	h.must(err)
	_, again, err := h.e.Reconcile(ctx, op.ID, 1, OutcomeSpec{Value: noun.Atom(11)})
	h.must(err)
	if !recorded || again {
		t.Fatalf("reconciled %v then %v, want exactly once", recorded, again)
	}
	got, err := h.e.Drive(ctx, inv.ID)
	h.must(err)
	if got.Status != store.InvocationCompleted || atomOf(t, got.Result) != 11 {
		t.Fatalf("after reconcile: %s %v", got.Status, got.Error)
	}
	wantCalls(t, "in the end", h.count, 0)
}

// Scenario 9: "let x = host(event); mem + x" installed with act host,
// the worker bound, admitted on input 7, driven to its act, prepared,
// dispatched (the act returns 7), driven to completed with 7 — while
// another prog's invocation on the same neuron has an unknown act and
// keeps its own state: one prog's unknown act never blocks another.
func TestScenarioToolRoundTripAlongsideIndependentProg(t *testing.T) {
	h := newHarness(t)
	h.grant(tagHost, tagCount)
	h.bind()
	blocked := h.install(callOnInput(tagCount), tagCount)
	tool := h.install(callOnInput(tagHost), tagHost)
	stuck := h.invoke(blocked, 3)
	h.count.set("unknown")
	_, err := h.e.Drive(ctx, stuck.ID)
	wantRefusal(t, "the other prog's unknown act", err, UnknownOutcome)
	inv := h.invoke(tool, 7)
	op := h.awaiting(inv)
	if op.Tag != tagHost || op.Stage != store.StageProposed {
		t.Fatalf("awaiting %+v", op)
	}
	tok, err := h.e.Prepare(ctx, inv.ID)
	h.must(err)
	res, err := h.e.Dispatch(ctx, tok)
	h.must(err)
	if res.Outcome == nil || atomOf(t, res.Outcome.Value) != 7 {
		t.Fatalf("dispatch: %+v", res)
	}
	_, err = h.e.Prepare(ctx, inv.ID)
	wantRefusal(t, "prepare after the outcome", err, Conflict)
	got, err := h.e.Drive(ctx, inv.ID)
	h.must(err)
	if got.Status != store.InvocationCompleted || atomOf(t, got.Result) != 7 || len(got.Output) != 1 || got.Output[0] != 7 {
		t.Fatalf("the round trip: %s %v %v", got.Status, got.Error, got.Output)
	}
	if n := h.host.Load(); n != 1 {
		t.Fatalf("host ran %d times", n)
	}
	v := h.view(stuck.ID)
	if v.Status != store.InvocationWaiting || !v.Operations[0].Attempts[0].Unknown {
		t.Fatalf("the other prog's invocation: %s", v.Status)
	}
	wantCalls(t, "the other prog's act", h.count, 1)
}
