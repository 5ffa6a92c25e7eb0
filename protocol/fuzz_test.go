package protocol

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/field"
	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// addExamples seeds a fuzz target with the committed examples whose names
// start with prefix; testdata/fuzz/<Target> holds further seeds.
func addExamples(f *testing.F, prefix string) {
	files, _ := filepath.Glob(filepath.Join("testdata", prefix+"*.json"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// Every input is bounded before it is parsed, so the fuzzer's inputs never
// make a parser allocate more than a small multiple of their size.

func FuzzJobSpec(f *testing.F) {
	addExamples(f, "jobspec-")
	f.Add([]byte(specJSON(f, map[string]string{"operation": `"verify"`, "artifact_ref": refJSON([]byte("certificate"))}, "")))
	caps := testCaps()
	f.Fuzz(func(t *testing.T, b []byte) {
		j, err := Admit(b, caps)
		// A worker decides exactly as the supervisor does.
		if run, rerr := AdmitToRun(b, caps); (rerr == nil) != (err == nil) ||
			(err != nil && AsError(rerr).Code != AsError(err).Code) {
			t.Fatalf("AdmitToRun: %v, Admit: %v", rerr, err)
		} else if err == nil && !reflect.DeepEqual(run.Spec, j.Spec) {
			t.Fatal("AdmitToRun admitted another spec")
		}
		if err != nil {
			e := AsError(err)
			if !e.Code.Known() || e.Message == "" || bytes.ContainsAny([]byte(e.Message), "\n\r") {
				t.Fatalf("bad error %#v", e)
			}
			return
		}
		// Whatever is admitted has a canonical form that admits to itself.
		again, err := Admit(j.Canonical, caps)
		if err != nil {
			t.Fatalf("canonical form refused: %v\n%s", err, j.Canonical)
		}
		if !bytes.Equal(again.Canonical, j.Canonical) {
			t.Fatalf("canonical form not stable")
		}
		for _, v := range j.Spec.Inputs {
			if v >= field.P {
				t.Fatal("non-canonical input admitted")
			}
		}
	})
}

func FuzzBundle(f *testing.F) {
	addExamples(f, "bundle-")
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := ParseBundle(b)
		if err != nil {
			if !AsError(err).Code.Known() {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		// The identity is the tree: the tokens decode back to a noun with
		// the same particle, within the profile's bounds.
		n, used, err := noun.DecodeTokens(p.Tokens, MaxFormulaNodes, MaxFormulaDepth)
		if err != nil || used != len(p.Tokens) {
			t.Fatalf("tokens do not decode: %v", err)
		}
		if n.Particle() != p.Particle {
			t.Fatal("particle is not the tree's")
		}
		// Wrapping the same assembly gives the same identity.
		w, err := WrapNox("x", []byte(p.Assembly))
		if err != nil {
			t.Fatalf("assembly accepted in a bundle but not wrapped: %v", err)
		}
		q, err := ParseBundle(w)
		if err != nil || q.Identity() != p.Identity() {
			t.Fatalf("wrapped identity differs: %v", err)
		}
	})
}

func FuzzInputFile(f *testing.F) {
	addExamples(f, "inputs-")
	f.Fuzz(func(t *testing.T, b []byte) {
		vs, err := ParseInputFile(b)
		if err != nil {
			if !AsError(err).Code.Known() {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		if len(vs) > MaxInputWords {
			t.Fatal("too many words accepted")
		}
		for _, v := range vs {
			if v >= field.P {
				t.Fatal("non-canonical value accepted")
			}
		}
	})
}
