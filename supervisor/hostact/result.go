package hostact

import "github.com/cyberia-to/cyber-supervisor/noxrunner/noun"

// Kind of a Result.
type Kind uint8

const (
	// KindUnknown: the act cannot say whether its effect happened. The
	// attempt stays unknown until the owner reconciles it.
	KindUnknown Kind = iota
	// KindValue: the act completed; its value becomes the call's witness.
	KindValue
	// KindFailed: the act definitely had no effect.
	KindFailed
)

// Result is what an act returns. The zero Result is unknown.
type Result struct {
	kind    Kind
	value   noun.Noun
	message string
}

// Value is a completed act's result.
func Value(v noun.Noun) Result { return Result{kind: KindValue, value: v} }

// Failed is a definite failure: the act had no effect.
func Failed(message string) Result { return Result{kind: KindFailed, message: message} }

// Unknown says the act may or may not have had its effect.
func Unknown(reason string) Result { return Result{kind: KindUnknown, message: reason} }

func (r Result) Kind() Kind       { return r.kind }
func (r Result) Value() noun.Noun { return r.value }
func (r Result) Message() string  { return r.message }
func (r Result) IsValue() bool    { return r.kind == KindValue }
func (r Result) IsFailed() bool   { return r.kind == KindFailed }
func (r Result) IsUnknown() bool  { return r.kind == KindUnknown }
