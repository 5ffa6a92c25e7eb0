package apitypes

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Result is an accepted result as the CLI prints it (result, run,
// submit --wait): the contract's result JSON (protocol.Result, from GET
// /v1/jobs/{id}/result), with where its certificate lies added after
// its keys: certificate_path when this home holds it, else
// certificate_host and, when that host is registered now,
// certificate_location.
type Result struct {
	Contract            json.RawMessage
	CertificatePath     string
	CertificateHost     string
	CertificateLocation string
}

// MarshalJSON writes the contract's keys in their order, then the
// certificate's that are set.
func (r Result) MarshalJSON() ([]byte, error) {
	obj := bytes.TrimSpace(r.Contract)
	if len(obj) < 2 || obj[0] != '{' || obj[len(obj)-1] != '}' || !json.Valid(obj) {
		return nil, errors.New("apitypes: a result is a JSON object")
	}
	var b bytes.Buffer
	b.Write(obj[:len(obj)-1])
	empty := len(bytes.TrimSpace(obj[1:len(obj)-1])) == 0
	for _, kv := range [...]struct{ key, value string }{
		{"certificate_path", r.CertificatePath},
		{"certificate_host", r.CertificateHost},
		{"certificate_location", r.CertificateLocation},
	} {
		if kv.value == "" {
			continue
		}
		if !empty {
			b.WriteByte(',')
		}
		empty = false
		k, _ := json.Marshal(kv.key)
		v, _ := json.Marshal(kv.value)
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}
