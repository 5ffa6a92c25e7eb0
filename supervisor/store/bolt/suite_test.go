package bolt_test

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/bolt"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store/storetest"
)

// backend is the local store as a storetest backend: one directory, one
// handle at a time (the file is locked).
var backend = storetest.Backend{New: func(t testing.TB) storetest.Opener {
	dir := t.TempDir()
	return func(t testing.TB) store.Store {
		s, err := bolt.Open(dir, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
}}

// TestDriverSuite runs the driver suite every store implementation
// passes (supervisor/store/storetest) against bbolt.
func TestDriverSuite(t *testing.T) { storetest.Run(t, backend) }

// TestLifecyclePropertiesFromV1: the suite's property run from a store
// migrated from schema 1.
func TestLifecyclePropertiesFromV1(t *testing.T) {
	storetest.LifecycleProperties(t, func(t *testing.T, _ *rapid.T) (storetest.Opener, map[string]*store.Job) {
		dir := t.TempDir()
		jobs := bolt.WriteV1Store(t, dir, storetest.SpecOf)
		open := func(t testing.TB) store.Store {
			s, err := bolt.Open(dir, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		return open, jobs
	})
}
