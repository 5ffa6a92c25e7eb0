package protocol

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func nestedFormula(depth int) string {
	// [0 [0 [0 ... 0]]] written with one bracket per level.
	return strings.Repeat("[0 ", depth) + "0" + strings.Repeat("]", depth)
}

func naryFormula(atoms int) string {
	return "[" + strings.TrimSpace(strings.Repeat("1 ", atoms)) + "]"
}

// balancedFormula is a complete binary tree of the given depth:
// 2^(depth+1)-1 nodes.
func balancedFormula(depth int) string {
	if depth == 0 {
		return "1"
	}
	sub := balancedFormula(depth - 1)
	return "[" + sub + " " + sub + "]"
}

func wrapRaw(src string) []byte {
	return []byte(bundleJSON(map[string]string{"assembly": fmt.Sprintf("%q", src)}))
}

func programWith(bundle []byte) string { return fmt.Sprintf(`{"bundle":%q}`, b64(bundle)) }

func values(n int, v string) string {
	return "[" + strings.TrimSuffix(strings.Repeat(`"`+v+`",`, n), ",") + "]"
}

func TestAdmitRejections(t *testing.T) {
	caps := testCaps()
	noWall := caps
	noWall.Limits.WallTime = false
	noMem := caps
	noMem.Limits.Memory = false
	noBudget := caps
	noBudget.Limits.Reductions = false
	onlyExecute := caps
	onlyExecute.Operations = []Operation{OpExecute}
	noTrace := caps
	noTrace.ProofKinds = []string{ProfileNone}

	type F = map[string]string
	cases := []struct {
		name   string
		fields F
		extra  string
		caps   *Capabilities
		code   Code
		inMsg  string
	}{
		{"unknown key", nil, `"foo":1`, nil, CodeInvalidJob, "$.foo: unknown key"},
		{"unknown nested key", F{"limits": `{"reductions":"1","cpu":"1"}`}, "", nil, CodeInvalidJob, "$.limits.cpu: unknown key"},
		{"unknown program key", F{"program": `{"bundle":"","name":"x"}`}, "", nil, CodeInvalidJob, "$.program.name: unknown key"},
		{"duplicate top-level key", nil, `"job_id":"job-2"`, nil, CodeInvalidJob, "$.job_id: duplicate key"},
		{"duplicate nested key", F{"limits": `{"reductions":"1","reductions":"2"}`}, "", nil, CodeInvalidJob, "$.limits.reductions: duplicate key"},
		{"duplicate identity key", F{"program": `{"bundle":"","identity":{"particle":"00","particle":"00"}}`}, "", nil, CodeInvalidJob, "$.program.identity.particle: duplicate key"},
		{"input = p", F{"inputs": `["18446744069414584321"]`}, "", nil, CodeInvalidJob, "$.inputs[0]: not a canonical field element"},
		{"input 2^64", F{"inputs": `["3","18446744073709551616"]`}, "", nil, CodeInvalidJob, "$.inputs[1]: not a canonical decimal"},
		{"input leading zero", F{"inputs": `["01"]`}, "", nil, CodeInvalidJob, "$.inputs[0]: not a canonical decimal"},
		{"input negative", F{"inputs": `["-1"]`}, "", nil, CodeInvalidJob, "$.inputs[0]"},
		{"input float string", F{"inputs": `["1.5"]`}, "", nil, CodeInvalidJob, "$.inputs[0]"},
		{"input float number", F{"inputs": `[1.5]`}, "", nil, CodeInvalidJob, "not a JSON number"},
		{"input number", F{"inputs": `[3]`}, "", nil, CodeInvalidJob, "$.inputs[0]: must be a decimal string"},
		{"input null", F{"inputs": `[null]`}, "", nil, CodeInvalidJob, "must be a string, not null"},
		{"inputs missing", F{"inputs": ""}, "", nil, CodeInvalidJob, "$.inputs: required key is missing"},
		{"too many inputs", F{"inputs": values(65, "1")}, "", nil, CodeInvalidJob, "65 elements, at most 64"},
		{"expected output = p", F{"expected_output": `["18446744069414584321"]`}, "", nil, CodeInvalidJob, "$.expected_output[0]"},
		{"too many expected outputs", F{"expected_output": values(4097, "1")}, "", nil, CodeInvalidJob, "4097 elements, at most 4096"},
		{"empty expected output", F{"expected_output": `[]`}, "", nil, CodeInvalidJob, "use null"},
		{"secret key", nil, `"secret":["35"]`, nil, CodeUnsupportedSecret, "$.secret"},
		{"secrets key", nil, `"secrets":[]`, nil, CodeUnsupportedSecret, "$.secrets"},
		{"witness key", nil, `"witness":null`, nil, CodeUnsupportedSecret, "$.witness"},
		{"state context object", F{"state_context": `{"root":"00"}`}, "", nil, CodeUnsupportedState, "$.state_context"},
		{"state context string", F{"state_context": `""`}, "", nil, CodeUnsupportedState, ""},
		{"state context false", F{"state_context": `false`}, "", nil, CodeUnsupportedState, ""},
		{"unknown profile", F{"profile": `"cyber-nox-public-trace-v3"`}, "", nil, CodeUnsupportedProfile, "exactly"},
		{"profile case", F{"profile": `"CYBER-NOX-PUBLIC-TRACE-V1"`}, "", nil, CodeUnsupportedProfile, ""},
		{"profile prefix", F{"profile": `"cyber-nox-public-trace"`}, "", nil, CodeUnsupportedProfile, ""},
		{"zheng v1", F{"profile": `"zheng-nox-public-execution-v1"`}, "", nil, CodeUnsupportedProfile, "not implemented"},
		{"zheng v2", F{"profile": `"zheng-nox-public-execution-v2"`}, "", nil, CodeUnsupportedProfile, "not implemented"},
		{"zheng v3", F{"profile": `"zheng-nox-public-execution-v3"`}, "", nil, CodeUnsupportedProfile, "not implemented"},
		{"none/1 prove", F{"profile": `"none/1"`, "operation": `"prove"`}, "", nil, CodeUnsupportedProfile, "no certificates"},
		{"profile not offered", nil, "", &noTrace, CodeUnsupportedProfile, "does not offer profile"},
		{"operation not offered", F{"operation": `"prove"`}, "", &onlyExecute, CodeUnsupportedProfile, "prove operation"},
		{"wall time not enforceable", F{"limits": `{"reductions":"1","wall_time_ms":"1000"}`}, "", &noWall, CodeUnsupportedLimit, "wall_time_ms"},
		{"memory not enforceable", F{"limits": `{"reductions":"1","memory_bytes":"1048576"}`}, "", &noMem, CodeUnsupportedLimit, "memory_bytes"},
		{"budget not enforceable", nil, "", &noBudget, CodeUnsupportedLimit, "reduction budget"},
		{"reductions zero", F{"limits": `{"reductions":"0"}`}, "", nil, CodeInvalidJob, "reductions"},
		{"reductions = p", F{"limits": `{"reductions":"18446744069414584321"}`}, "", nil, CodeInvalidJob, "below p"},
		{"reductions missing", F{"limits": `{}`}, "", nil, CodeInvalidJob, "$.limits.reductions: required"},
		{"reductions number", F{"limits": `{"reductions":1000}`}, "", nil, CodeInvalidJob, "not a JSON number"},
		{"artifact cap too large", F{"limits": `{"reductions":"1","artifact_bytes":"68719476737"}`}, "", nil, CodeInvalidJob, "artifact_bytes"},
		{"wrong contract", F{"contract": `"cyber/worker/v2"`}, "", nil, CodeInvalidJob, "$.contract"},
		{"job id dot", F{"job_id": `".hidden"`}, "", nil, CodeInvalidJob, "$.job_id"},
		{"job id slash", F{"job_id": `"a/b"`}, "", nil, CodeInvalidJob, "$.job_id"},
		{"job id long", F{"job_id": `"` + strings.Repeat("a", 129) + `"`}, "", nil, CodeInvalidJob, "$.job_id"},
		{"bad operation", F{"operation": `"run"`}, "", nil, CodeInvalidJob, "$.operation"},
		{"verify without artifact", F{"operation": `"verify"`}, "", nil, CodeInvalidJob, "needs an artifact"},
		{"verify empty artifact", F{"operation": `"verify"`, "artifact": `""`}, "", nil, CodeInvalidJob, "needs an artifact"},
		{"artifact on execute", F{"artifact": `"AAAA"`}, "", nil, CodeInvalidJob, "only verify"},
		{"artifact over cap", F{"operation": `"verify"`, "artifact": `"AAAAAAAA"`, "limits": `{"reductions":"1","artifact_bytes":"5"}`}, "", nil, CodeArtifactTooLarge, "6 bytes, at most 5"},
		{"artifact bad base64", F{"operation": `"verify"`, "artifact": `"AAA*"`}, "", nil, CodeInvalidJob, "base64"},
		{"bundle bad base64", F{"program": `{"bundle":"AAA"}`}, "", nil, CodeInvalidJob, "$.program.bundle: not standard padded base64"},
		{"bundle empty", F{"program": `{"bundle":""}`}, "", nil, CodeInvalidJob, "empty"},
		{"bundle missing", F{"program": `{}`}, "", nil, CodeInvalidJob, "$.program.bundle: required"},
		{"bundle not JSON", F{"program": programWith([]byte("[5,5]"))}, "", nil, CodeInvalidJob, "bundle: $: must be an object"},
		{"bundle target_vm triton", F{"program": programWith([]byte(bundleJSON(map[string]string{"target_vm": `"triton"`})))}, "", nil, CodeUnsupportedProfile, "target_vm"},
		{"bundle target_os neptune", F{"program": programWith([]byte(bundleJSON(map[string]string{"target_os": `"neptune"`})))}, "", nil, CodeUnsupportedProfile, "target_os"},
		{"bundle reads_state", F{"program": programWith([]byte(bundleJSON(map[string]string{"reads_state": `true`})))}, "", nil, CodeUnsupportedState, "reads state"},
		{"bundle duplicate key", F{"program": programWith([]byte(`{"target_vm":"nox","assembly":"[0 1]","assembly":"[0 2]"}`))}, "", nil, CodeInvalidJob, "bundle: $.assembly: duplicate key"},
		{"bundle wrong type", F{"program": programWith([]byte(bundleJSON(map[string]string{"name": `5`})))}, "", nil, CodeInvalidJob, "$.name: must be a string"},
		{"oversize assembly", F{"program": programWith(wrapRaw("[0 1]" + strings.Repeat(" ", MaxAssemblyBytes)))}, "", nil, CodeInvalidJob, "at most 262144"},
		{"too many nodes", F{"program": programWith(wrapRaw(naryFormula(2049)))}, "", nil, CodeInvalidJob, "more than 4096 nodes"},
		{"too many balanced nodes", F{"program": programWith(wrapRaw(balancedFormula(12)))}, "", nil, CodeInvalidJob, "more than 4096 nodes"},
		{"too deep by brackets", F{"program": programWith(wrapRaw(nestedFormula(129)))}, "", nil, CodeInvalidJob, "nested deeper than 128"},
		{"too deep by n-ary fold", F{"program": programWith(wrapRaw(naryFormula(130)))}, "", nil, CodeInvalidJob, "depth 128"},
		{"literal = p in assembly", F{"program": programWith(wrapRaw("[1 18446744069414584321]"))}, "", nil, CodeInvalidJob, "not a canonical field element"},
		{"assembly syntax", F{"program": programWith(wrapRaw("[1 2"))}, "", nil, CodeInvalidJob, "unclosed"},
		{"identity mismatch", F{"program": fmt.Sprintf(`{"bundle":%q,"identity":{"particle":"%s"}}`, b64(mustWrap(t, "a", testFormula)), strings.Repeat("0", 64))}, "", nil, CodeInvalidJob, "does not match"},
		{"identity upper hex", F{"program": fmt.Sprintf(`{"bundle":%q,"identity":{"particle":"%s"}}`, b64(mustWrap(t, "a", testFormula)), strings.Repeat("A", 64))}, "", nil, CodeInvalidJob, "lowercase hex"},
		{"identity unknown key", F{"program": fmt.Sprintf(`{"bundle":%q,"identity":{"particle":"%s","x":1}}`, b64(mustWrap(t, "a", testFormula)), strings.Repeat("0", 64))}, "", nil, CodeInvalidJob, "$.program.identity.x: unknown key"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cp := caps
			if c.caps != nil {
				cp = *c.caps
			}
			in := specJSON(t, c.fields, c.extra)
			_, err := Admit([]byte(in), cp)
			wantCode(t, err, c.code, c.inMsg)
		})
	}
}

func TestAdmitMalformed(t *testing.T) {
	for _, in := range []string{``, `null`, `[]`, `{"contract":"cyber/worker/v1"`, specJSON(t, nil, "") + "x"} {
		_, err := Admit([]byte(in), testCaps())
		wantCode(t, err, CodeInvalidJob, "")
	}
	big := bytes.Repeat([]byte(" "), MaxJobSpecBytes+1)
	_, err := Admit(big, testCaps())
	wantCode(t, err, CodeInvalidJob, "at most 50331648")
}

func TestAdmitInvalidCaps(t *testing.T) {
	caps := testCaps()
	caps.ZeroKnowledge = true
	_, err := Admit([]byte(specJSON(t, nil, "")), caps)
	wantCode(t, err, CodeInternalError, "zero_knowledge")
}

func TestAdmitAccepts(t *testing.T) {
	bundle := mustWrap(t, "add.nox", testFormula)
	p, err := ParseBundle(bundle)
	if err != nil {
		t.Fatal(err)
	}
	id := p.Identity().wire()
	artifact := b64(bytes.Repeat([]byte{7}, 100))
	cases := map[string]map[string]string{
		"minimal":       nil,
		"no state key":  {"state_context": "", "expected_output": ""},
		"expected":      {"expected_output": `["8"]`},
		"none/1":        {"profile": `"none/1"`},
		"all limits":    {"limits": `{"reductions":"1000000","wall_time_ms":"5000","memory_bytes":"268435456","artifact_bytes":"1048576"}`},
		"zero limits":   {"limits": `{"reductions":"1","wall_time_ms":"0","memory_bytes":"0","artifact_bytes":"0"}`},
		"prove":         {"operation": `"prove"`},
		"verify":        {"operation": `"verify"`, "artifact": fmt.Sprintf("%q", artifact)},
		"null artifact": {"artifact": `null`},
		"identity":      {"program": fmt.Sprintf(`{"bundle":%q,"identity":{"particle":%q,"tokens_sha256":%q}}`, b64(bundle), id.Particle, id.TokensSHA256)},
		"particle only": {"program": fmt.Sprintf(`{"bundle":%q,"identity":{"particle":%q}}`, b64(bundle), id.Particle)},
		"max inputs":    {"inputs": values(64, "18446744069414584320")},
		"no inputs":     {"inputs": `[]`},
		"max outputs":   {"expected_output": values(4096, "0")},
		"max formula":   {"program": programWith(wrapRaw(balancedFormula(11)))},
		"max depth":     {"program": programWith(wrapRaw(nestedFormula(128)))},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			j, err := Admit([]byte(specJSON(t, f, "")), testCaps())
			if err != nil {
				t.Fatal(err)
			}
			if j.Spec.Program.Identity == nil || !j.Spec.Program.Identity.Matches(j.Identity()) {
				t.Fatal("identity not filled in")
			}
			// The canonical bytes are a fixed point of parse and marshal.
			again, err := Admit(j.Canonical, testCaps())
			if err != nil {
				t.Fatalf("re-admitting the canonical form: %v", err)
			}
			if !bytes.Equal(again.Canonical, j.Canonical) {
				t.Fatalf("canonical form not stable:\n%s\n%s", j.Canonical, again.Canonical)
			}
			// A worker's admission is the same but for the bytes.
			run, err := AdmitToRun([]byte(specJSON(t, f, "")), testCaps())
			if err != nil {
				t.Fatal(err)
			}
			if run.Canonical != nil || !reflect.DeepEqual(run.Spec, j.Spec) || !reflect.DeepEqual(run.Program, j.Program) {
				t.Fatalf("AdmitToRun differs from Admit: %+v", run)
			}
		})
	}
}

func TestJobSpecRoundTrip(t *testing.T) {
	id := ProgramIdentity{Particle: [32]byte{1, 2, 3}, TokensSHA256: [32]byte{4}}
	specs := []JobSpec{
		{
			Contract: ContractV1, JobID: "a.b_c-1", Operation: OpExecute, Profile: ProfilePublicTrace,
			Program: ProgramSpec{Bundle: mustWrap(t, "x", testFormula)},
			Inputs:  []uint64{}, Limits: Limits{Reductions: 1},
		},
		{
			Contract: ContractV1, JobID: "j", Operation: OpVerify, Profile: ProfilePublicTrace,
			Program:        ProgramSpec{Bundle: []byte(`{"target_vm":"nox","assembly":"[0 1]"}`), Identity: &id},
			Inputs:         []uint64{0, 18446744069414584320},
			ExpectedOutput: []uint64{7, 8},
			Limits:         Limits{Reductions: 18446744069414584320, WallTimeMS: 1, MemoryBytes: 2, ArtifactBytes: 3},
			Artifact:       []byte{1, 2, 3},
		},
	}
	for _, s := range specs {
		b, err := s.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseJobSpec(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !reflect.DeepEqual(*got, s) {
			t.Fatalf("round trip:\n%+v\n%+v", *got, s)
		}
		b2, _ := got.MarshalJSON()
		if !bytes.Equal(b, b2) {
			t.Fatalf("marshal not deterministic:\n%s\n%s", b, b2)
		}
	}
}

func TestAdmitSpecStruct(t *testing.T) {
	s := JobSpec{
		Contract: ContractV1, JobID: "j", Operation: OpExecute, Profile: ProfilePublicTrace,
		Program: ProgramSpec{Bundle: mustWrap(t, "x", testFormula)},
		Inputs:  []uint64{18446744069414584321}, Limits: Limits{Reductions: 10},
	}
	_, err := AdmitSpec(s, testCaps())
	wantCode(t, err, CodeInvalidJob, "inputs[0]")
	s.Inputs = nil
	s.Artifact = []byte{}
	_, err = AdmitSpec(s, testCaps())
	wantCode(t, err, CodeInvalidJob, "only verify")
	s.Artifact = nil
	if _, err := AdmitSpec(s, testCaps()); err != nil {
		t.Fatal(err)
	}
}

// Admission must not depend on the order in which a spec spells its keys,
// and one payload must give one canonical form.
func TestCanonicalIgnoresSpelling(t *testing.T) {
	a := specJSON(t, nil, "")
	b := "{\n  " + strings.Join(reverseTopLevel(t, a), ",\n  ") + "\n}"
	ja, err := Admit([]byte(a), testCaps())
	if err != nil {
		t.Fatal(err)
	}
	jb, err := Admit([]byte(b), testCaps())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ja.Canonical, jb.Canonical) {
		t.Fatal("key order changed the canonical form")
	}
}

func reverseTopLevel(t *testing.T, spec string) []string {
	t.Helper()
	root, err := decodeTree([]byte(spec), jobSpecTree, CodeInvalidJob)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for i := len(root.keys) - 1; i >= 0; i-- {
		out = append(out, fmt.Sprintf("%q: %s", root.keys[i], rawOf(root.items[i])))
	}
	return out
}

// rawOf re-renders a tree value; enough for the test's simple specs.
func rawOf(v *jvalue) string {
	switch v.kind {
	case jNull:
		return "null"
	case jBool:
		return fmt.Sprint(v.b)
	case jNumber:
		return v.str()
	case jString:
		return fmt.Sprintf("%q", v.str())
	case jArray:
		var parts []string
		for _, it := range v.items {
			parts = append(parts, rawOf(it))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	var parts []string
	for i, k := range v.keys {
		parts = append(parts, fmt.Sprintf("%q : %s", k, rawOf(v.items[i])))
	}
	return "{ " + strings.Join(parts, " , ") + " }"
}
