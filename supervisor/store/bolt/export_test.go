package bolt

import (
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// WriteV1Store writes a schema 1 store in dir holding queued jobs j1, j2
// and j3 (specs SpecOf-style, seqs 1 to 3), for the driver suite's
// property run from a migrated store (suite_test.go). It returns the jobs
// as the migrated store must hold them.
func WriteV1Store(t testing.TB, dir string, specOf func(string) []byte) map[string]*store.Job {
	recs := map[string][]byte{}
	out := map[string]*store.Job{}
	for i, id := range []string{"j1", "j2", "j3"} {
		spec := specOf(id)
		recs[id] = v1JobRecord(id, spec, store.SpecDigest(spec), uint64(i+1), lifecycle.Queued, 0, 0)
		out[id] = &store.Job{ID: id, SpecDigest: store.SpecDigest(spec), Seq: uint64(i + 1), State: lifecycle.Queued,
			Created: time.Date(2023, 11, 14, 22, 13, 20, 0, time.UTC)}
	}
	writeV1(t, dir, map[string]map[string][]byte{"jobs": recs})
	return out
}
