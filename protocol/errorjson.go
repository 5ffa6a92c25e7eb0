package protocol

type errorWire struct {
	Code      Code   `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

// MarshalJSON writes {"code","message","retryable"}.
func (e Error) MarshalJSON() ([]byte, error) {
	return marshalCompact(errorWire{Code: e.Code, Message: e.Message, Retryable: e.Retryable})
}

var errorTree = treeLimits{maxDepth: 8, maxValues: 256}

// ParseError reads an error as a worker reports it. The worker is not
// trusted to speak the code set: an unknown code becomes internal_error,
// and the message is cut to a safe, printable line. A malformed error
// object is itself reported as internal_error. Unknown keys are ignored.
func ParseError(b []byte) *Error {
	const code = CodeInternalError
	if len(b) > MaxErrorBytes {
		return Errorf(code, "worker error: %d bytes, at most %d", len(b), MaxErrorBytes)
	}
	root, err := decodeTree(b, errorTree, code)
	if err != nil {
		return AsError(prefixed("worker error", err))
	}
	r := reader{code: code}
	o, err := r.object(root, "$")
	if err != nil {
		return AsError(prefixed("worker error", err))
	}
	c, err := needString(r, o, "code")
	if err != nil {
		return AsError(prefixed("worker error", err))
	}
	msg := ""
	if v := o.get("message"); v != nil {
		if msg, err = r.str(v, o.at("message")); err != nil {
			return AsError(prefixed("worker error", err))
		}
	}
	e := &Error{Code: Code(c), Message: SafeMessage(msg), Retryable: Code(c).Retryable()}
	if v := o.get("retryable"); v != nil {
		if e.Retryable, err = r.boolean(v, o.at("retryable")); err != nil {
			return AsError(prefixed("worker error", err))
		}
	}
	if !e.Code.Known() {
		return Errorf(CodeInternalError, "worker reported an unknown error code")
	}
	return e
}
