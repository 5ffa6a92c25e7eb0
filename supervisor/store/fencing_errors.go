package store

// Errors of the fencing store's records that are neither the job
// store's nor the trust's (authenticated records, docs/fencing.md).

// ErrUnauthenticated: a fencing record's authentication tag is missing or
// does not verify under the neuron's record key: the record was written
// or altered without the vault. It is ErrTampered as well.
var ErrUnauthenticated error = unauthenticated{}

type unauthenticated struct{}

func (unauthenticated) Error() string        { return "record not authenticated by the neuron's key" }
func (unauthenticated) Is(target error) bool { return target == ErrTampered }

// ErrRootPutBack: the store's neuron root is older than records of its
// store, or than what the vault says of them. It is ErrTampered, and
// ErrCorrupt: nothing starts on such a store (exit 6, store_damaged).
var ErrRootPutBack error = rootPutBack{}

type rootPutBack struct{}

func (rootPutBack) Error() string {
	return "the neuron root is older than the store's records (it was put back)"
}
func (rootPutBack) Is(target error) bool { return target == ErrTampered || target == ErrCorrupt }
