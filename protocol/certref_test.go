package protocol

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// refJSON is an artifact_ref of the digest of data and its size.
func refJSON(data []byte) string {
	return fmt.Sprintf(`{"sha256":"%x","size":"%d"}`, sha256.Sum256(data), len(data))
}

// A verify job names its certificate by reference: the ref parses, is
// kept in the canonical form (a fixed point of parse and marshal), and
// the spec carries no bytes of the certificate. Fails on main: unknown
// key artifact_ref.
func TestArtifactRefParses(t *testing.T) {
	data := bytes.Repeat([]byte{9}, 1000)
	j, err := Admit([]byte(specJSON(t, map[string]string{"operation": `"verify"`, "artifact_ref": refJSON(data)}, "")), testCaps())
	if err != nil {
		t.Fatal(err)
	}
	ref := j.Spec.ArtifactRef
	if ref == nil || ref.SHA256 != sha256.Sum256(data) || ref.Size != 1000 || j.Spec.Artifact != nil {
		t.Fatalf("ref %+v, artifact %v", ref, j.Spec.Artifact)
	}
	want := fmt.Sprintf(`"artifact_ref":{"sha256":"%x","size":"1000"},"artifact":null}`, sha256.Sum256(data))
	if !bytes.HasSuffix(j.Canonical, []byte(want)) {
		t.Fatalf("canonical form ends %q, want %q", j.Canonical[max(0, len(j.Canonical)-120):], want)
	}
	again, err := Admit(j.Canonical, testCaps())
	if err != nil || !bytes.Equal(again.Canonical, j.Canonical) {
		t.Fatalf("canonical form not stable: %v", err)
	}
	var streamed bytes.Buffer
	if err := j.Spec.WriteJSON(&streamed); err != nil || !bytes.Equal(streamed.Bytes(), j.Canonical) {
		t.Fatalf("WriteJSON differs from the canonical form: %v", err)
	}
	// The ref's size is bounded by the job's artifact cap, not by the
	// spec's: a 64 GiB certificate is named in a few hundred bytes.
	big := fmt.Sprintf(`{"sha256":"%s","size":"%d"}`, strings.Repeat("ab", 32), uint64(MaxArtifactBytes))
	if _, err := ParseJobSpec([]byte(specJSON(t, map[string]string{"operation": `"verify"`, "artifact_ref": big,
		"limits": fmt.Sprintf(`{"reductions":"1","artifact_bytes":"%d"}`, uint64(MaxArtifactBytes))}, ""))); err != nil {
		t.Fatalf("a ref of the largest cap: %v", err)
	}
}

// A spec without a ref encodes as it did before the key existed: the
// digest of every stored job stays what it was.
func TestArtifactRefAbsentKeepsTheCanonicalForm(t *testing.T) {
	j, err := Admit([]byte(specJSON(t, map[string]string{"operation": `"verify"`, "artifact": `"AAAA"`}, "")), testCaps())
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(j.Canonical, []byte("artifact_ref")) {
		t.Fatalf("canonical form names artifact_ref: %s", j.Canonical)
	}
}

func TestArtifactRefRefused(t *testing.T) {
	data := []byte("certificate")
	hexSum := fmt.Sprintf("%x", sha256.Sum256(data))
	type F = map[string]string
	verify := func(f F) F {
		f["operation"] = `"verify"`
		return f
	}
	cases := []struct {
		name   string
		fields F
		code   Code
		substr string
	}{
		{"both forms", verify(F{"artifact": `"AAAA"`, "artifact_ref": refJSON(data)}), CodeInvalidJob, "not both"},
		{"ref on execute", F{"artifact_ref": refJSON(data)}, CodeInvalidJob, "only verify"},
		{"ref on prove", F{"operation": `"prove"`, "artifact_ref": refJSON(data)}, CodeInvalidJob, "only verify"},
		{"over the cap", verify(F{"artifact_ref": refJSON(data), "limits": `{"reductions":"1","artifact_bytes":"10"}`}), CodeArtifactTooLarge, "11 bytes, at most 10"},
		{"over the default cap", verify(F{"artifact_ref": fmt.Sprintf(`{"sha256":%q,"size":"%d"}`, hexSum, DefaultArtifactBytes+1)}), CodeArtifactTooLarge, "at most"},
		{"size zero", verify(F{"artifact_ref": fmt.Sprintf(`{"sha256":%q,"size":"0"}`, hexSum)}), CodeInvalidJob, "never empty"},
		{"size number", verify(F{"artifact_ref": fmt.Sprintf(`{"sha256":%q,"size":11}`, hexSum)}), CodeInvalidJob, "$.artifact_ref.size"},
		{"size missing", verify(F{"artifact_ref": fmt.Sprintf(`{"sha256":%q}`, hexSum)}), CodeInvalidJob, "$.artifact_ref.size: required"},
		{"digest missing", verify(F{"artifact_ref": `{"size":"11"}`}), CodeInvalidJob, "$.artifact_ref.sha256: required"},
		{"digest upper case", verify(F{"artifact_ref": fmt.Sprintf(`{"sha256":%q,"size":"11"}`, strings.ToUpper(hexSum))}), CodeInvalidJob, "lowercase hex"},
		{"digest short", verify(F{"artifact_ref": `{"sha256":"abcd","size":"11"}`}), CodeInvalidJob, "64 lowercase hex"},
		{"unknown key", verify(F{"artifact_ref": fmt.Sprintf(`{"sha256":%q,"size":"11","path":"/etc/passwd"}`, hexSum)}), CodeInvalidJob, "$.artifact_ref.path"},
		{"not an object", verify(F{"artifact_ref": `"x"`}), CodeInvalidJob, "$.artifact_ref"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseJobSpec([]byte(specJSON(t, c.fields, "")))
			var perr *Error
			if !errors.As(err, &perr) || perr.Code != c.code || !strings.Contains(perr.Message, c.substr) {
				t.Fatalf("got %v, want %s containing %q", err, c.code, c.substr)
			}
		})
	}
	// A spec built in Go is held to the same rules.
	s := JobSpec{Contract: ContractV1, JobID: "j", Operation: OpVerify, Profile: ProfilePublicTrace,
		Program: ProgramSpec{Bundle: mustWrap(t, "add.nox", testFormula)}, Limits: Limits{Reductions: 1},
		Artifact: data, ArtifactRef: &CertificateRef{SHA256: sha256.Sum256(data), Size: 11}}
	if err := s.Validate(); err == nil || !strings.Contains(err.Error(), "not both") {
		t.Fatalf("Validate of both forms: %v", err)
	}
}
