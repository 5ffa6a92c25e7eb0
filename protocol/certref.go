package protocol

import "encoding/hex"

// CertificateRef names a verify job's certificate by its content instead
// of carrying it inline: its SHA-256 and its size in bytes. The bytes
// live outside the spec (the supervisor's home,
// <home>/certificates/<sha256>: docs/protocol.md, "A certificate by
// reference"), so a spec that names one stays small whatever the
// certificate's length, which is bounded by the job's artifact limit
// (up to MaxArtifactBytes) rather than by MaxJobSpecBytes.
type CertificateRef struct {
	SHA256 [32]byte
	Size   uint64
}

// Hex is the ref's digest as the store names the file: 64 lowercase hex
// digits.
func (c CertificateRef) Hex() string { return hex.EncodeToString(c.SHA256[:]) }

type certificateRefWire struct {
	SHA256 string  `json:"sha256"`
	Size   decimal `json:"size"`
}

func (c *CertificateRef) wire() *certificateRefWire {
	if c == nil {
		return nil
	}
	return &certificateRefWire{SHA256: c.Hex(), Size: decimal(c.Size)}
}

// readCertificateRef reads $.artifact_ref: exactly sha256 (64 lowercase
// hex digits) and size (a decimal string above 0).
func readCertificateRef(r reader, v *jvalue, path string) (*CertificateRef, error) {
	o, err := r.object(v, path)
	if err != nil {
		return nil, err
	}
	if err := o.only([]string{"sha256", "size"}); err != nil {
		return nil, err
	}
	ref := new(CertificateRef)
	dv, err := o.need("sha256")
	if err != nil {
		return nil, err
	}
	if ref.SHA256, err = r.hex32(dv, o.at("sha256")); err != nil {
		return nil, err
	}
	sv, err := o.need("size")
	if err != nil {
		return nil, err
	}
	if ref.Size, err = r.u64(sv, o.at("size")); err != nil {
		return nil, err
	}
	if ref.Size == 0 {
		return nil, Errorf(CodeInvalidJob, "%s: a certificate is never empty", o.at("size"))
	}
	return ref, nil
}
