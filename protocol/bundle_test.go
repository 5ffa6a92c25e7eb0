package protocol

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

func TestIdentityIgnoresSpellingAndMetadata(t *testing.T) {
	spellings := []string{
		"[5 [[0 2] [0 6]]]",
		"[5 [0 2] [0 6]]",                // n-ary fold
		"  [5\n\t[ [0 2]\r\n[0 6] ] ]  ", // whitespace
		"[5 [[0 2] [0 0_6]]]",            // digit separator
	}
	var ids []ProgramIdentity
	for i, src := range spellings {
		for _, name := range []string{"add.nox", "/some/where/else.nox", ""} {
			b := mustWrap(t, name, src)
			p, err := ParseBundle(b)
			if err != nil {
				t.Fatalf("%q: %v", src, err)
			}
			ids = append(ids, p.Identity())
			if i == 0 && name == "add.nox" && p.Name != "add" {
				t.Errorf("name %q", p.Name)
			}
		}
	}
	// A full Trident-style bundle with other metadata, same formula.
	full := bundleJSON(map[string]string{
		"name": `"other"`, "version": `"9.9.9"`, "target_os": `"cyber"`, "entry_point": `"main"`,
		"functions":   `[{"name":"main","hash":"ab","signature":"fn main()","future":[1,2]}]`,
		"cost":        `{"padded_height":1024,"estimated_proving_ns":"5","processor":17}`,
		"source_hash": `"ff"`, "reads_state": `false`, "extra": `{"nested":{"deep":[null]}}`,
	})
	p, err := ParseBundle([]byte(full))
	if err != nil {
		t.Fatal(err)
	}
	ids = append(ids, p.Identity())
	for i := range ids {
		if ids[i] != ids[0] {
			t.Fatalf("identity %d differs", i)
		}
	}
	for _, other := range []string{"[5 [[0 2] [0 7]]]", "[[5 [0 2]] [0 6]]", "[5 [[0 2] [0 6] 0]]"} {
		q, err := ParseBundle(mustWrap(t, "add", other))
		if err != nil {
			t.Fatal(err)
		}
		if q.Identity().Particle == ids[0].Particle || q.Identity().TokensSHA256 == ids[0].TokensSHA256 {
			t.Errorf("%q has the identity of another tree", other)
		}
	}
}

func TestProgramFields(t *testing.T) {
	b := mustWrap(t, "x.nox", testFormula)
	p, err := ParseBundle(b)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := noun.Parse(testFormula)
	if !bytes.Equal(p.Tokens, noun.AppendTokens(nil, want)) || p.Particle != want.Particle() {
		t.Fatal("tokens or particle do not match noxrunner")
	}
	if !bytes.Equal(p.Bundle, b) || p.Assembly != testFormula {
		t.Fatal("bundle bytes or assembly not kept")
	}
	b[0] = 'X'
	if p.Bundle[0] == 'X' {
		t.Fatal("Program.Bundle aliases the caller's slice")
	}
}

func TestWrapNox(t *testing.T) {
	b := mustWrap(t, "dir/add.nox", "[5 [[0 2] [0 6]]]\n")
	want := `{"name":"add","version":"","target_vm":"nox","target_os":null,"assembly":"[5 [[0 2] [0 6]]]\n","entry_point":"","functions":[],"cost":{},"source_hash":""}`
	if string(b) != want {
		t.Fatalf("wrapped:\n%s\nwant:\n%s", b, want)
	}
	if again := mustWrap(t, "dir/add.nox", "[5 [[0 2] [0 6]]]\n"); !bytes.Equal(again, b) {
		t.Fatal("not deterministic")
	}
	if !strings.HasPrefix(string(mustWrap(t, "a<b>&c.nox", "0")), `{"name":"a<b>&c","v`) {
		t.Fatal("name escaped")
	}
	for _, bad := range []string{"", "[1", "[1 18446744069414584321]", nestedFormula(129), "x"} {
		_, err := WrapNox("bad", []byte(bad))
		wantCode(t, err, CodeInvalidJob, "")
	}
	_, err := WrapNox("big", bytes.Repeat([]byte(" "), MaxAssemblyBytes+1))
	wantCode(t, err, CodeInvalidJob, "at most")
}

func TestParseBundleRejections(t *testing.T) {
	cases := []struct {
		in    string
		code  Code
		inMsg string
	}{
		{bundleJSON(map[string]string{"target_vm": `"triton"`}), CodeUnsupportedProfile, "target_vm"},
		{bundleJSON(map[string]string{"target_vm": ""}), CodeInvalidJob, "$.target_vm: required"},
		{bundleJSON(map[string]string{"target_os": `"neptune"`}), CodeUnsupportedProfile, "target_os"},
		{bundleJSON(map[string]string{"target_os": `5`}), CodeInvalidJob, "$.target_os: must be a string"},
		{bundleJSON(map[string]string{"reads_state": `true`}), CodeUnsupportedState, ""},
		{bundleJSON(map[string]string{"reads_state": `"false"`}), CodeInvalidJob, "$.reads_state: must be a boolean"},
		{bundleJSON(map[string]string{"assembly": ""}), CodeInvalidJob, "$.assembly: required"},
		{bundleJSON(map[string]string{"assembly": `["[0 1]"]`}), CodeInvalidJob, "$.assembly: must be a string"},
		{bundleJSON(map[string]string{"version": `1`}), CodeInvalidJob, "$.version"},
		{bundleJSON(map[string]string{"functions": `{}`}), CodeInvalidJob, "$.functions: must be an array"},
		{bundleJSON(map[string]string{"functions": `[{"name":1}]`}), CodeInvalidJob, "$.functions[0].name"},
		{bundleJSON(map[string]string{"functions": `[5]`}), CodeInvalidJob, "$.functions[0]: must be an object"},
		{bundleJSON(map[string]string{"cost": `{"padded_height":-1}`}), CodeInvalidJob, "$.cost.padded_height"},
		{bundleJSON(map[string]string{"cost": `{"padded_height":1.5}`}), CodeInvalidJob, "$.cost.padded_height"},
		{bundleJSON(map[string]string{"cost": `{"x":"01"}`}), CodeInvalidJob, "$.cost.x"},
		{bundleJSON(map[string]string{"cost": `[]`}), CodeInvalidJob, "$.cost: must be an object"},
		{bundleJSON(map[string]string{"extra": `{"a":1,"a":2}`}), CodeInvalidJob, "$.extra.a: duplicate key"},
		{`{"target_vm":"nox","target_vm":"nox","assembly":"0"}`, CodeInvalidJob, "duplicate key"},
		{`[]`, CodeInvalidJob, "must be an object"},
		{`{"target_vm":"nox","assembly":"0"`, CodeInvalidJob, "malformed"},
		{bundleJSON(map[string]string{"assembly": fmt.Sprintf("%q", naryFormula(130))}), CodeInvalidJob, "depth 128"},
	}
	for _, c := range cases {
		_, err := ParseBundle([]byte(c.in))
		if err == nil {
			t.Errorf("%s: accepted", c.in)
			continue
		}
		wantCode(t, err, c.code, c.inMsg)
	}
	_, err := ParseBundle(bytes.Repeat([]byte(" "), MaxBundleBytes+1))
	wantCode(t, err, CodeInvalidJob, "at most")
}

// The committed examples in testdata stay valid (they are the seeds of the
// fuzz targets and the examples of docs/protocol.md).
func TestExamples(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no examples")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		base := filepath.Base(f)
		switch {
		case strings.HasPrefix(base, "jobspec-"):
			_, err = Admit(b, testCaps())
		case strings.HasPrefix(base, "bundle-"):
			_, err = ParseBundle(b)
		case strings.HasPrefix(base, "inputs-"):
			_, err = ParseInputFile(b)
		case strings.HasPrefix(base, "result-"):
			_, err = ParseResult(b)
		case strings.HasPrefix(base, "capabilities-"):
			_, err = ParseCapabilities(b)
		case strings.HasPrefix(base, "descriptor-"):
			_, err = ParseDescriptor(b)
		default:
			t.Errorf("%s: unknown example kind", f)
		}
		if err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
