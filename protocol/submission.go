package protocol

import (
	"strconv"
	"time"
)

// MaxSubmissionBytes bounds the body of a submission to the supervisor's
// API: a maximal job spec and its envelope.
const MaxSubmissionBytes = MaxJobSpecBytes + 64<<10

// Submission is the body of the supervisor API's POST /v1/jobs:
// {"spec": {job spec}, "priority": n, "retry": {...}}. It is the daemon's
// envelope, not the worker contract, and keeps that API's JSON numbers.
type Submission struct {
	// Spec is the job spec's JSON text as sent; Admit reads it. It is a
	// slice of the bytes parsed, not a copy: they must not change while
	// it is used.
	Spec     []byte
	Priority int32
	// Retry is nil when the key is absent or null.
	Retry *RetryRequest
}

// RetryRequest is a submission's retry policy:
// {"max_attempts": n, "backoff_ns": n, "max_backoff_ns": n, "retryable": [codes] | null}.
// Ranges are the supervisor's to check; the codes are checked here.
type RetryRequest struct {
	MaxAttempts uint32
	Backoff     time.Duration
	MaxBackoff  time.Duration
	// Retryable is nil for the codes' own defaults.
	Retryable []Code
}

// The envelope is small around its spec: four keys, a retry object of four
// and at most one entry per code.
var submissionTree = treeLimits{maxDepth: 4, maxValues: 64, rawMembers: []string{"spec"}}

// ParseSubmission reads a submission envelope as strictly as a job spec:
// duplicate keys at any depth (the spec's own are Admit's to refuse),
// unknown keys, wrong types, fractions and out-of-range numbers and unknown
// codes are refused with invalid_job naming the JSON path, and no value is
// echoed.
func ParseSubmission(b []byte) (*Submission, error) {
	const code = CodeInvalidJob
	if len(b) > MaxSubmissionBytes {
		return nil, Errorf(code, "submission: %d bytes, at most %d", len(b), MaxSubmissionBytes)
	}
	root, err := decodeTree(b, submissionTree, code)
	if err != nil {
		return nil, prefixed("submission", err)
	}
	sub, err := readSubmission(reader{code: code}, root)
	if err != nil {
		return nil, prefixed("submission", err)
	}
	return sub, nil
}

func readSubmission(r reader, root *jvalue) (*Submission, error) {
	o, err := r.object(root, "$")
	if err != nil {
		return nil, err
	}
	if err := o.only([]string{"spec", "priority", "retry"}); err != nil {
		return nil, err
	}
	spec, err := o.need("spec")
	if err != nil {
		return nil, err
	}
	if spec.kind != jRaw {
		return nil, r.fail(o.at("spec"), "must be a job spec object")
	}
	sub := &Submission{Spec: spec.text}
	if v := o.get("priority"); v != nil {
		n, err := r.intNumber(v, o.at("priority"), 32)
		if err != nil {
			return nil, err
		}
		sub.Priority = int32(n)
	}
	if v := o.get("retry"); v != nil && v.kind != jNull {
		if sub.Retry, err = readRetry(r, v, o.at("retry")); err != nil {
			return nil, err
		}
	}
	return sub, nil
}

func readRetry(r reader, v *jvalue, path string) (*RetryRequest, error) {
	o, err := r.object(v, path)
	if err != nil {
		return nil, err
	}
	if err := o.only([]string{"max_attempts", "backoff_ns", "max_backoff_ns", "retryable"}); err != nil {
		return nil, err
	}
	var p RetryRequest
	if v := o.get("max_attempts"); v != nil {
		n, err := r.u64Number(v, o.at("max_attempts"))
		if err != nil {
			return nil, err
		}
		if n > 1<<32-1 {
			return nil, r.fail(o.at("max_attempts"), "above 2^32-1")
		}
		p.MaxAttempts = uint32(n)
	}
	for key, d := range map[string]*time.Duration{"backoff_ns": &p.Backoff, "max_backoff_ns": &p.MaxBackoff} {
		if v := o.get(key); v != nil {
			n, err := r.intNumber(v, o.at(key), 64)
			if err != nil {
				return nil, err
			}
			*d = time.Duration(n)
		}
	}
	if v := o.get("retryable"); v != nil && v.kind != jNull {
		items, err := r.array(v, o.at("retryable"), len(ContractCodes()))
		if err != nil {
			return nil, err
		}
		p.Retryable = make([]Code, 0, len(items))
		for i, it := range items {
			s, err := r.str(it, index(o.at("retryable"), i))
			if err != nil {
				return nil, err
			}
			if !Code(s).Known() {
				return nil, r.fail(index(o.at("retryable"), i), "not an error code of the contract")
			}
			p.Retryable = append(p.Retryable, Code(s))
		}
	}
	return &p, nil
}

// intNumber reads a signed integer written as a JSON number that fits in
// bits bits. Fractions and exponents are refused, even when their value is
// whole: a number means one thing.
func (r reader) intNumber(v *jvalue, path string, bits int) (int64, error) {
	if err := r.want(v, jNumber, path); err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(v.str(), 10, bits)
	if err != nil {
		return 0, r.fail(path, "not an integer of %d bits", bits)
	}
	return n, nil
}
