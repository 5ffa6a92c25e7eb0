package protocol

import (
	"errors"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// Program is a parsed ProgramBundle: the frozen bytes it came from, the
// formula they hold, and the formula's identity.
type Program struct {
	// Bundle is the exact bundle bytes, frozen at admission; a copy owned
	// by the Program.
	Bundle []byte
	// Formula is the parsed assembly. Noun graphs are not safe for
	// concurrent digesting or reduction; share a Program between goroutines
	// only for reading these fields.
	Formula noun.Noun
	// Tokens is the canonical pre-order token encoding of Formula.
	Tokens []byte
	// Particle is the hemera digest of Formula.
	Particle [32]byte
	// Name is the bundle's display name: metadata, never identity.
	Name string
	// Assembly is the formula text as it appears in the bundle.
	Assembly string
}

// Identity is the program identity derived from the formula.
func (p *Program) Identity() ProgramIdentity { return IdentityOf(p.Tokens, p.Particle) }

// bundleTree bounds a bundle's JSON. Unknown keys are allowed (bundles are
// additive), so they may nest, but never deeply or in bulk.
var bundleTree = treeLimits{maxDepth: 32, maxValues: 1 << 16}

// ParseBundle reads a ProgramBundle (Trident's JSON: name, version,
// target_vm, target_os, assembly, entry_point, functions, cost, source_hash,
// reads_state). Unknown keys are ignored; malformed JSON, duplicate keys and
// wrongly typed known keys are refused with invalid_job; a VM other than
// nox or an OS other than null/"cyber" with unsupported_profile; a program
// that reads state with unsupported_state. The assembly must be a formula
// within the public profile's bounds (256 KiB, 4096 nodes, depth 128) whose
// literals are canonical field elements.
func ParseBundle(b []byte) (*Program, error) {
	if len(b) > MaxBundleBytes {
		return nil, Errorf(CodeInvalidJob, "bundle: %d bytes, at most %d", len(b), MaxBundleBytes)
	}
	r := reader{code: CodeInvalidJob}
	root, err := decodeTree(b, bundleTree, CodeInvalidJob)
	if err != nil {
		return nil, prefixed("bundle", err)
	}
	o, err := r.object(root, "$")
	if err != nil {
		return nil, prefixed("bundle", err)
	}
	m, err := readBundleFields(r, o)
	if err != nil {
		return nil, prefixed("bundle", err)
	}
	if m.targetVM != "nox" {
		return nil, Errorf(CodeUnsupportedProfile, "bundle: target_vm is not nox")
	}
	if m.targetOS != nil && *m.targetOS != "cyber" {
		return nil, Errorf(CodeUnsupportedProfile, "bundle: target_os must be null or cyber")
	}
	if m.readsState {
		return nil, Errorf(CodeUnsupportedState, "bundle: the program reads state, which the stateless profile refuses")
	}
	p, err := parseAssembly(m.assembly)
	if err != nil {
		return nil, err
	}
	p.Bundle = append([]byte(nil), b...)
	p.Name = m.name
	return p, nil
}

// bundleMeta is what admission needs from a bundle's keys.
type bundleMeta struct {
	name, assembly string
	targetVM       string
	targetOS       *string
	readsState     bool
}

func readBundleFields(r reader, o *object) (bundleMeta, error) {
	var m bundleMeta
	optString := func(key string) (string, error) {
		v := o.get(key)
		if v == nil {
			return "", nil
		}
		return r.str(v, o.at(key))
	}
	var err error
	if m.name, err = optString("name"); err != nil {
		return m, err
	}
	if _, err = optString("version"); err != nil {
		return m, err
	}
	if _, err = optString("entry_point"); err != nil {
		return m, err
	}
	if _, err = optString("source_hash"); err != nil {
		return m, err
	}
	v, err := o.need("target_vm")
	if err != nil {
		return m, err
	}
	if m.targetVM, err = r.str(v, o.at("target_vm")); err != nil {
		return m, err
	}
	if v := o.get("target_os"); v != nil && v.kind != jNull {
		s, err := r.str(v, o.at("target_os"))
		if err != nil {
			return m, err
		}
		m.targetOS = &s
	}
	if v := o.get("reads_state"); v != nil {
		if m.readsState, err = r.boolean(v, o.at("reads_state")); err != nil {
			return m, err
		}
	}
	if v, err = o.need("assembly"); err != nil {
		return m, err
	}
	if m.assembly, err = r.str(v, o.at("assembly")); err != nil {
		return m, err
	}
	if err := readFunctions(r, o); err != nil {
		return m, err
	}
	return m, readCost(r, o)
}

// readFunctions checks the types of functions: [{name, hash, signature}].
func readFunctions(r reader, o *object) error {
	v := o.get("functions")
	if v == nil || v.kind == jNull {
		return nil
	}
	items, err := r.array(v, o.at("functions"), bundleTree.maxValues)
	if err != nil {
		return err
	}
	for i, it := range items {
		fo, err := r.object(it, index(o.at("functions"), i))
		if err != nil {
			return err
		}
		for _, k := range []string{"name", "hash", "signature"} {
			if fv := fo.get(k); fv != nil {
				if _, err := r.str(fv, fo.at(k)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// readCost checks that cost is a flat object of u64 estimates. Trident
// writes JSON numbers; canonical decimal strings are accepted too, since
// both say the same thing unambiguously.
func readCost(r reader, o *object) error {
	v := o.get("cost")
	if v == nil || v.kind == jNull {
		return nil
	}
	co, err := r.object(v, o.at("cost"))
	if err != nil {
		return err
	}
	for i, k := range co.v.keys {
		cv := co.v.items[i]
		if cv.kind == jString {
			_, err = r.u64(cv, co.at(k))
		} else {
			_, err = r.u64Number(cv, co.at(k))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// parseAssembly parses and measures a formula under the profile's bounds.
// The parser's nesting bound is the depth bound: a bracket nested 129 deep
// always puts a node below depth 128, so it rejects nothing valid, and
// Measure then checks the exact tree depth.
func parseAssembly(src string) (*Program, error) {
	if len(src) > MaxAssemblyBytes {
		return nil, Errorf(CodeInvalidJob, "bundle: assembly is %d bytes, at most %d", len(src), MaxAssemblyBytes)
	}
	f, err := noun.ParseWith(src, noun.ParseOptions{
		Literals:   noun.CanonicalLiterals,
		MaxNesting: MaxFormulaDepth,
		MaxNodes:   MaxFormulaNodes,
	})
	if err != nil {
		var se *noun.SyntaxError
		if errors.As(err, &se) {
			// The parser's message names a position and a token class; it
			// may quote one literal of the program, which is public.
			return nil, Errorf(CodeInvalidJob, "bundle: assembly: %s", se.Error())
		}
		return nil, Errorf(CodeInvalidJob, "bundle: assembly does not parse")
	}
	if _, err := noun.Measure(f, MaxFormulaNodes, MaxFormulaDepth); err != nil {
		return nil, Errorf(CodeInvalidJob, "bundle: formula exceeds %d nodes or depth %d", MaxFormulaNodes, MaxFormulaDepth)
	}
	return &Program{
		Formula:  f,
		Tokens:   noun.AppendTokens(nil, f),
		Particle: f.Particle(),
		Assembly: src,
	}, nil
}

// prefixed puts a context word in front of an *Error's message.
func prefixed(what string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return &Error{Code: e.Code, Message: what + ": " + e.Message, Retryable: e.Retryable}
	}
	return err
}
