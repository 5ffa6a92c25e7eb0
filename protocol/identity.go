package protocol

import (
	"crypto/sha256"
	"encoding/hex"
)

// ProgramIdentity is what a program is, as opposed to what it is called:
// the particle (hemera structural digest) of the parsed formula and the
// SHA-256 of its canonical token encoding. Both are functions of the
// formula's tree alone, so whitespace, n-ary bracket spelling, the bundle's
// name, path and metadata never change them. The SHA-256 lets anyone check
// the identity without a hemera implementation, whose parameters upstream
// still reserves the right to change.
type ProgramIdentity struct {
	Particle [32]byte
	// TokensSHA256 is optional where an identity is declared by a caller;
	// the zero value means "not stated".
	TokensSHA256 [32]byte
}

// IdentityOf derives the identity from a canonical token encoding and its
// particle.
func IdentityOf(tokens []byte, particle [32]byte) ProgramIdentity {
	return ProgramIdentity{Particle: particle, TokensSHA256: sha256.Sum256(tokens)}
}

// Matches reports whether a declared identity agrees with a derived one: the
// particle must be equal, and the token digest too when it is stated.
func (d ProgramIdentity) Matches(derived ProgramIdentity) bool {
	if d.Particle != derived.Particle {
		return false
	}
	return d.TokensSHA256 == [32]byte{} || d.TokensSHA256 == derived.TokensSHA256
}

type identityWire struct {
	Particle     string `json:"particle"`
	TokensSHA256 string `json:"tokens_sha256,omitempty"`
}

func (d ProgramIdentity) wire() identityWire {
	w := identityWire{Particle: hex.EncodeToString(d.Particle[:])}
	if d.TokensSHA256 != [32]byte{} {
		w.TokensSHA256 = hex.EncodeToString(d.TokensSHA256[:])
	}
	return w
}

// readIdentity reads {"particle": hex, "tokens_sha256": hex?}; strict
// requests refuse other keys.
func (r reader) identity(v *jvalue, path string, strict bool) (ProgramIdentity, error) {
	var id ProgramIdentity
	o, err := r.object(v, path)
	if err != nil {
		return id, err
	}
	pv, err := o.need("particle")
	if err != nil {
		return id, err
	}
	if id.Particle, err = r.hex32(pv, o.at("particle")); err != nil {
		return id, err
	}
	if tv := o.get("tokens_sha256"); tv != nil {
		if id.TokensSHA256, err = r.hex32(tv, o.at("tokens_sha256")); err != nil {
			return id, err
		}
	}
	if strict {
		return id, o.closed()
	}
	return id, nil
}
