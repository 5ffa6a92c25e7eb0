package earlynetns

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func nsInode(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// TestStartTake: Take returns a namespace other than the process's, made
// once however often Start is called, and every thread is back home.
func TestStartTake(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("REQUIRE_ISOLATION") == "1" {
			t.Fatal("REQUIRE_ISOLATION=1 and not root: cannot make a network namespace")
		}
		t.Skip("skipping: not root (REQUIRE_ISOLATION=1 turns this into a failure)")
	}
	host := nsInode(t, "/proc/self/ns/net")
	if Take() != nil || Pending() {
		t.Fatal("a namespace before Start")
	}
	Start()
	Start()
	if !Pending() {
		t.Fatal("nothing pending after Start")
	}
	f := Take()
	if f == nil {
		t.Fatal("Take after Start: nil")
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	if st.Ino == host {
		t.Fatal("the namespace taken is the host's")
	}
	if Take() != nil || Pending() {
		t.Fatal("a second namespace from one Start")
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		if ino := nsInode(t, "/proc/self/task/"+task.Name()+"/ns/net"); ino != host {
			t.Errorf("thread %s left in namespace %d", task.Name(), ino)
		}
	}
}
