package bolt

import (
	"fmt"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// OpenReadOnlyWith is OpenReadOnly for reading a home's records as its
// daemon would: keys (nil: the store's own, empty) checks the signed
// records and the fencing records' tags, and a store this build would
// first have to create or migrate is refused (ErrSchema), since a
// read-only open may not write the migration. The shared lock is held
// until Close: keep the store open only as long as a read takes, so
// that a daemon starting meanwhile gets its exclusive lock.
func OpenReadOnlyWith(path string, lockWait time.Duration, keys *store.Trust) (*Store, error) {
	s, err := OpenReadOnly(path, lockWait)
	if err != nil {
		return nil, err
	}
	if keys != nil {
		s.trust = keys
	}
	whole, err := s.whole(s.file)
	if err == nil && !whole {
		err = fmt.Errorf("%w: %s is not at schema %d (or misses a bucket): start the daemon once (cyber-supervisor serve), which migrates it, then read it", store.ErrSchema, path, SchemaVersion)
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}
