package cert

import (
	"errors"
	"fmt"
)

var (
	// ErrRejected: the certificate is malformed, not canonical, or some
	// step does not follow the rules (contract code proof_rejected).
	ErrRejected = errors.New("certificate rejected")
	// ErrMismatch: the certificate is valid but is not about the expected
	// computation (contract code claim_mismatch).
	ErrMismatch = errors.New("certificate does not match the expected computation")
	// ErrNotProvable: the run did not end with a result (halt, error, or a
	// refused call/look), so there is nothing to certify.
	ErrNotProvable = errors.New("run cannot be certified")
	// ErrTooLarge: a certificate outgrew the bounds of its job: its node
	// table crossed Bounds.MaxNodes during verification, or its encoding
	// crossed ProveOptions.MaxBytes while it was proved (contract code
	// artifact_too_large).
	ErrTooLarge = errors.New("certificate exceeds the bounds of its job")
)

func rejectf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrRejected}, args...)...)
}

func mismatchf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMismatch}, args...)...)
}

func tooLargef(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrTooLarge}, args...)...)
}
