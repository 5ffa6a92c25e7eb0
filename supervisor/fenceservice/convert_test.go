package fenceservice

import (
	"flag"
	"path/filepath"
	"testing"

	goldenfile "github.com/cyberia-to/cyber-supervisor/internal/golden"
	"github.com/cyberia-to/cyber-supervisor/supervisor/fencing"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// updateConvert rewrites testdata/convert/*.json: go test
// ./supervisor/fenceservice -run TestConvert -update-convert.
var updateConvert = flag.Bool("update-convert", false, "rewrite testdata/convert/*.json")

// conversions is what the service answers for the records of
// records_test.go: its JSON is testdata/convert/<name>.json.
func conversions() map[string]any {
	unbound := *recRoot
	unbound.Worker, unbound.Records = nil, ""
	everyProg := *recGrant
	everyProg.Acts, everyProg.Progs = nil, nil
	noProg := *recGrant
	noProg.Progs = []string{}
	bare := &store.Invocation{ID: "ib", Seq: 1, Neuron: recNeuron, Network: "devnet", Prog: "pa", Status: store.InvocationRunning,
		Limit: 5000, Created: r0, Updated: r0}
	return map[string]any{
		"root":                  recRoot,
		"root_unbound":          &unbound,
		"grant":                 recGrant,
		"grant_every_prog":      &everyProg,
		"grant_no_prog":         &noProg,
		"prog":                  recProg,
		"progs":                 []*store.Prog{recProg},
		"invocation":            recInvocation,
		"invocation_bare":       bare,
		"invocations":           []*store.Invocation{recInvocation, bare},
		"invocation_reply":      recInvocationView,
		"invocation_reply_bare": &fencing.InvocationView{Invocation: bare, Operations: []fencing.OperationView{}, Children: []string{}},
		"operation_reply":       recOperationView,
		"operations":            []fencing.OperationView{recOperationView},
		"act_attempt":           recAttempt,
		"claim":                 recClaim,
		"outcome":               recOutcome,
		"reservation":           recReservation,
	}
}

// TestConvert: each conversion of records whose every field is set
// gives its golden JSON. The files were written from the store's records
// as the service answered them before it had types of its own, so they
// hold that the JSON clients read did not change.
func TestConvert(t *testing.T) {
	for name, v := range conversions() {
		t.Run(name, func(t *testing.T) {
			goldenfile.JSON(t, filepath.Join("testdata", "convert", name+".json"), v, *updateConvert,
				"a record converts to other JSON than before; -update-convert rewrites it")
		})
	}
}
