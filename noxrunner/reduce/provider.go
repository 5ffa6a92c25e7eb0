package reduce

import "github.com/cyberia-to/cyber-supervisor/noxrunner/noun"

// Provider answers call (16) and look (17). The reference engine uses Null;
// the public stateless profile uses Public; the host-act environment
// supplies its own.
type Provider interface {
	// Admit is consulted when a call or look formula is reached, after the
	// depth and malformed-formula checks and before its cost is charged.
	// A non-nil error aborts the reduction.
	Admit(pattern uint64) error
	// Call returns the witness for tag, or ok=false when there is none
	// (the reduction then halts).
	Call(tag uint64, object noun.Noun) (witness noun.Noun, ok bool, err error)
	// Look returns the value of key in namespace ns under the state root
	// whose four limbs are given, or ok=false when unavailable.
	Look(root [4]uint64, ns, key uint64) (value uint64, ok bool, err error)
}

// Null is the reference CLI's provider: call halts, look is Unavailable.
type Null struct{}

func (Null) Admit(uint64) error                              { return nil }
func (Null) Call(uint64, noun.Noun) (noun.Noun, bool, error) { return noun.Noun{}, false, nil }
func (Null) Look([4]uint64, uint64, uint64) (uint64, bool, error) {
	return 0, false, nil
}

// Public is the public stateless profile: any reached call or look aborts
// with UnsupportedServiceError before anything is charged. Quoted 16s and
// 17s in data are unaffected.
type Public struct{}

func (Public) Admit(pattern uint64) error {
	return &UnsupportedServiceError{Pattern: pattern}
}
func (Public) Call(uint64, noun.Noun) (noun.Noun, bool, error) { return noun.Noun{}, false, nil }
func (Public) Look([4]uint64, uint64, uint64) (uint64, bool, error) {
	return 0, false, nil
}
