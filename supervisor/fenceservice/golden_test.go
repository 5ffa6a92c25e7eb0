package fenceservice

import (
	"encoding/json"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	goldenfile "github.com/cyberia-to/cyber-supervisor/internal/golden"
	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/neuron"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// The fencing requests' and replies' JSON is the API's contract
// (docs/fencing.md, "API"): each type, marshalled from a fixed value, is
// compared with its file in testdata/golden, so a renamed or retyped
// field shows as a diff. go test -run Golden -update rewrites the files.

var update = flag.Bool("update", false, "rewrite testdata/golden from the fixed values")

var (
	at       = time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)
	neuronID = neuron.ID{0x11, 0x22, 0x33}
	policy   = neuron.Particle{0xab, 0xcd}
	text     = "[1 2]"
	message  = "the act failed"
	worker   = protocol.WorkerDescriptor{Machine: protocol.MachineNox, Environment: protocol.EnvHostAct,
		ProofProfile: protocol.ProfileNone, Network: "testnet",
		Executor: protocol.Executor{Warrior: protocol.WarriorNoxWorker, Version: "1.2.3", Backend: protocol.BackendEmbeddedSync,
			WorkerID: "w1", DeviceID: "d1", BootID: "b1"},
		MaxArgumentBytes: 1 << 20, Acts: []uint64{1, 2}}
	root = &store.Root{Neuron: neuronID, Profile: neuron.Profile, Network: "testnet", Policy: policy,
		Epoch: 1, Generation: 2, Worker: &worker, Updated: at, Signature: store.Hex{0x01, 0x02}}
	grant = &store.Grant{Neuron: neuronID, Network: "testnet", Policy: policy, Epoch: 1, Revision: 3, Enabled: true,
		Acts: store.U64s{1}, Progs: []string{"p1"}, Created: at, Signature: store.Hex{0x03}}
	prog = &store.Prog{ID: "p1", Neuron: neuronID, Revision: 1, Environment: protocol.EnvHostAct, Program: []byte{0x01},
		Particle: policy, Name: "add.nox", State: store.ProgActive, StepLimit: 1000, MaxInFlight: 4,
		Acts: store.U64s{1}, Created: at, Updated: at}
	invocation = &store.Invocation{ID: "i1", Seq: 1, Neuron: neuronID, Network: "testnet", Prog: "p1", ProgRevision: 1,
		Inputs: store.U64s{5}, Epoch: 1, Status: store.InvocationCompleted, Parent: "i0", Limit: 1000, Charged: 10,
		Delegated: 20, Held: 0, Ordinal: 1, Result: []byte{0x07}, Output: store.U64s{7},
		Error: nil, Created: at, Updated: at}
	outcome   = &store.Outcome{Operation: "o1", Attempt: 1, Kind: store.OutcomeValue, Value: []byte{0x07}, Source: "worker", Recorded: at}
	operation = fencing.OperationView{
		Operation: &store.Operation{ID: "o1", Neuron: neuronID, Network: "testnet", Prog: "p1", Invocation: "i1", Ordinal: 1,
			Tag: 1, Argument: []byte{0x05}, Policy: policy, Epoch: 1, Stage: store.StageConsumed, Attempt: 1, Created: at, Updated: at},
		StageName: store.StageConsumed.String(),
		Attempts: []fencing.AttemptView{{
			ActAttempt: &store.ActAttempt{Operation: "o1", N: 1, Neuron: neuronID, Network: "testnet", Prog: "p1", Invocation: "i1",
				Tag: 1, OpDigest: store.Hex{0x09}, Executor: store.ExecutorWorker, Worker: &worker, Generation: 2, Policy: policy,
				Epoch: 1, Created: at, Authorization: store.Hex{0x0a}},
			Claim:   &store.Claim{Operation: "o1", Attempt: 1, Generation: 2, Worker: worker, Created: at, Signature: store.Hex{0x0b}},
			Outcome: outcome,
		}},
	}
)

// golden is the fixed value of every request and reply type in types.go.
// The replies are converted from the store's records (convert.go), as
// the service answers them: these files were written when the replies
// were the records themselves, so they hold that the conversions changed
// nothing clients read.
var golden = map[string]any{
	"NeuronInitBody": NeuronInitBody{Network: "testnet"},
	"NeuronReply":    NeuronReply{Root: RootOf(root), Grant: GrantOf(grant), Worker: worker},
	"PolicyBody":     PolicyBody{Policy: policy, Epoch: 2},
	"GrantBody":      GrantBody{Revision: 3, Acts: []string{"emit", "0x2"}, Progs: []string{"p1"}, Disabled: true},
	"PlacementBody":  PlacementBody{Generation: 2},
	"ProgBody":       ProgBody{Bundle: json.RawMessage(`{"formula":"x"}`), Acts: []string{"emit"}, StepLimit: 1000, MaxInFlight: 4},
	"ProgReply":      ProgReply{Prog: ProgOf(prog), Created: true},
	"UpgradeBody":    UpgradeBody{Revision: 1, Bundle: json.RawMessage(`{"formula":"y"}`), Acts: []string{"host"}, StepLimit: 2000, MaxInFlight: 8},
	"InvokeBody":     InvokeBody{Prog: "p1", Inputs: apitypes.U64s{5, 6}, Parent: "i0", Steps: 50},
	"ReconcileBody":  ReconcileBody{Attempt: 1, Value: &text, Failed: &message},
	"ReconcileReply": ReconcileReply{Outcome: OutcomeOf(outcome), Recorded: true},
	"ActInfo":        ActInfo{Name: "emit", Tag: 1, Hex: "0x1"},
	"InvocationReply": *InvocationReplyOf(&fencing.InvocationView{Invocation: invocation, Archived: true,
		Reservation: &store.Reservation{Invocation: "i1", Steps: 100, Base: 10, Boot: "b1", Created: at},
		Operations:  []fencing.OperationView{operation}, Children: []string{"i2"}, Idle: true}),
	"OperationReply": OperationReplyOf(operation),
}

func TestGoldenJSON(t *testing.T) {
	for name, v := range golden {
		t.Run(name, func(t *testing.T) {
			goldenfile.JSON(t, filepath.Join("testdata", "golden", name+".json"), v, *update,
				"a renamed field is documented in docs/fencing.md, API; go test -run Golden -update rewrites it")
		})
	}
}

// TestGoldenCoversEveryType: every type types.go declares has a fixed
// value above and a golden file, and no golden file is left over.
func TestGoldenCoversEveryType(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "types.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, s := range g.Specs {
			declared = append(declared, s.(*ast.TypeSpec).Name.Name)
		}
	}
	if len(declared) == 0 {
		t.Fatal("types.go declares no type")
	}
	for _, name := range declared {
		if _, ok := golden[name]; !ok {
			t.Errorf("%s has no fixed value in golden", name)
		}
		if _, err := os.Stat(filepath.Join("testdata", "golden", name+".json")); err != nil {
			t.Errorf("%s has no golden file: %v", name, err)
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(declared)
	for _, p := range files {
		name := strings.TrimSuffix(filepath.Base(p), ".json")
		if i := sort.SearchStrings(declared, name); i == len(declared) || declared[i] != name {
			t.Errorf("golden file %s names no type of types.go", p)
		}
	}
}
