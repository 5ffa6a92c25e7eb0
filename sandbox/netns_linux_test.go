package sandbox

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestNetnsRecycledOnlyWhenEmpty: a worker gets a network namespace that
// is its own while it runs (not the host's, not a running neighbour's),
// with lo alone and down; once it is reaped, the next worker gets the same
// namespace back (see netnsPool), and a configuration without seccomp gets
// a fresh one that is not kept.
func TestNetnsRecycledOnlyWhenEmpty(t *testing.T) { forEachInit(t, netnsRecycledOnlyWhenEmpty) }

func netnsRecycledOnlyWhenEmpty(t *testing.T, use func(*Config)) {
	f := newFixture(t)
	cfg := f.isolated()
	use(&cfg)
	host := netnsOf(t, os.Getpid())
	defer checkThreadsAtHome(t, host)

	first := mustStart(t, cfg)
	ns1 := netnsOf(t, first.sb.Pid())
	second := mustStart(t, cfg)
	ns2 := netnsOf(t, second.sb.Pid())
	if ns1 == host || ns2 == host || ns1 == ns2 {
		t.Fatalf("network namespaces: host %s, first %s, second %s: want three different ones", host, ns1, ns2)
	}
	checkLoOnlyDown(t, first.sb.Pid())

	first.stop()
	<-first.sb.Done()
	third := mustStart(t, cfg)
	if ns3 := netnsOf(t, third.sb.Pid()); ns3 != ns1 {
		t.Errorf("third worker's namespace %s, want the first's %s back (it was empty)", ns3, ns1)
	}
	checkLoOnlyDown(t, third.sb.Pid())
	if _, err := third.prober.Ping("x"); err != nil {
		t.Errorf("worker in a recycled namespace: %v", err)
	}

	noSeccomp := cfg
	noSeccomp.Seccomp, noSeccomp.SeccompAllow = false, nil
	idle := theNetns.idleCount()
	open := mustStart(t, noSeccomp)
	if ns := netnsOf(t, open.sb.Pid()); ns == host || ns == ns1 || ns == ns2 {
		t.Errorf("worker without seccomp in namespace %s (host %s, others %s %s): want a fresh one", ns, host, ns1, ns2)
	}
	open.stop()
	<-open.sb.Done()
	if got := theNetns.idleCount(); got != idle {
		t.Errorf("idle namespaces %d after a worker without seccomp, want %d (its namespace is not kept)", got, idle)
	}
}

func netnsOf(t *testing.T, pid int) string {
	t.Helper()
	ns, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// checkLoOnlyDown looks at the interfaces of pid's network namespace from
// a thread that joins it.
func checkLoOnlyDown(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var ifaces []net.Interface
	err = inOtherNetns(func() error {
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("setns: %w", err)
		}
		return nil
	}, func() (err error) {
		ifaces, err = net.Interfaces()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(ifaces) != 1 || ifaces[0].Name != "lo" || ifaces[0].Flags&net.FlagUp != 0 {
		t.Errorf("interfaces %v: want lo alone, down", ifaces)
	}
}

// checkThreadsAtHome: making namespaces moved no thread of the supervisor
// for good (a goroutine locked to the main thread cannot retire it).
func checkThreadsAtHome(t *testing.T, host string) {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		ns, err := os.Readlink("/proc/self/task/" + task.Name() + "/ns/net")
		if err == nil && ns != host {
			t.Errorf("thread %s left in network namespace %s (the supervisor's is %s)", task.Name(), ns, host)
		}
	}
}
