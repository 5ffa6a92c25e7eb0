package store

import (
	"fmt"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// Bounds of stored nouns: a program, an argument or a value decodes within these
// (the descriptor's argument bound is checked by the engine as well).
const (
	MaxNounNodes = 1 << 21
	MaxNounDepth = 1 << 16
)

// CheckNoun checks that b is exactly one noun's canonical tokens within
// the bounds, without building it.
func CheckNoun(b []byte) error {
	used, err := noun.CheckTokens(b, MaxNounNodes, MaxNounDepth)
	if err != nil {
		return err
	}
	if used != len(b) {
		return fmt.Errorf("%w: %d bytes after the noun", noun.ErrTokens, len(b)-used)
	}
	return nil
}

// DecodeNoun reads canonical tokens that must be exactly one noun.
func DecodeNoun(b []byte) (noun.Noun, error) {
	n, used, err := noun.DecodeTokens(b, MaxNounNodes, MaxNounDepth)
	if err != nil {
		return noun.Noun{}, err
	}
	if used != len(b) {
		return noun.Noun{}, fmt.Errorf("%w: %d bytes after the noun", noun.ErrTokens, len(b)-used)
	}
	return n, nil
}
