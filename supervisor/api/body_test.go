package api

import (
	"bytes"
	"net/http/httptest"
	"runtime"
	"testing"
)

// TestReadBodyAllocatesTheBodyOnce: a large body with a declared length
// is read into one buffer of its size once the allowance has arrived
// (the request holds its share of the budget for all of it), not grown
// by doubling: before, a 43 MiB submission took 107 MiB of buffers. A
// body without a declared length still grows with what arrives.
func TestReadBodyAllocatesTheBodyOnce(t *testing.T) {
	cfg, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{cfg: cfg, budget: newByteBudget(cfg.BodyBudget)}
	const size = 8<<20 + 12345
	body := bytes.Repeat([]byte{'x'}, size)
	for _, declared := range []bool{true, false} {
		r := httptest.NewRequest("POST", "/v1/jobs", bytes.NewReader(body))
		if !declared {
			r.ContentLength = -1
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		got, release, err := s.readBody(httptest.NewRecorder(), r, 32<<20)
		runtime.ReadMemStats(&after)
		release()
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("declared %v: %v, %d bytes read", declared, err, len(got))
		}
		n := after.TotalAlloc - before.TotalAlloc
		t.Logf("declared %v: %.1f MiB allocated for a %.1f MiB body", declared, float64(n)/(1<<20), float64(size)/(1<<20))
		if declared && n > size+1<<20 {
			t.Errorf("%d bytes allocated for a declared body of %d", n, size)
		}
	}
}
