package supervisor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/cyberia-to/cyber-supervisor/protocol"
	"github.com/cyberia-to/cyber-supervisor/supervisor/lifecycle"
)

// On a shared store each host's counts follow its own writes only; an
// overview that finds them older than clusterRecount recounts in the
// background, after which every host counts the jobs whichever host ran
// them.
func TestOverviewRecountsOnACluster(t *testing.T) {
	defer func(d time.Duration) { clusterRecount = d }(clusterRecount)
	clusterRecount = 0
	sups, _, _ := cluster(t, 2)
	defer func() {
		for _, s := range sups {
			s.close(t)
		}
	}()
	a := sups[0]
	for i := range 4 {
		id := a.submit(t, spec(t, fmt.Sprintf("ov%d", i), protocol.OpExecute, add2, []uint64{1, 2}, protocol.Limits{Reductions: 100}, nil))
		if st := a.wait(t, id); st.Job.State != lifecycle.Accepted {
			t.Fatalf("%s: %s", id, st.Job.State)
		}
	}
	for _, s := range sups {
		deadline := time.Now().Add(30 * time.Second)
		for {
			o, err := s.Overview(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if o.Store != "etcd" {
				t.Fatalf("store %q", o.Store)
			}
			if o.Jobs[lifecycle.Accepted] == 4 && len(o.Jobs) == 1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s counts %v", s.HostID(), o.Jobs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
