package artifacts

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// A worker's leftovers: every kind of entry a hostile worker could plant.
func TestStripLeavesOnlyPlainFilesAndDirs(t *testing.T) {
	_, d := newSandbox(t)
	p := d.Path()
	mustWrite(t, filepath.Join(p, "artifact"), []byte("A"))
	mustWrite(t, filepath.Join(p, "suid"), []byte("#!/bin/sh\n"))
	if err := os.Chmod(filepath.Join(p, "suid"), 0o6755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(p, "sub"), 0o2777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(p, "sub"), 0o3777); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(p, "sub", "inner"), []byte("B"))
	if err := unix.Mkfifo(filepath.Join(p, "fifo"), 0o666); err != nil {
		t.Fatal(err)
	}
	target := outside(t)
	if err := os.Symlink(filepath.Join(target, "secret"), filepath.Join(p, "sub", "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(target, "secret"), filepath.Join(p, "hardlink")); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", filepath.Join(p, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if err := unix.Setxattr(filepath.Join(p, "artifact"), "user.planted", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(filepath.Join(p, "sub", "inner"), 12345, 12345); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mknod(filepath.Join(p, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Fatal(err)
		}
	}

	got, err := d.Strip()
	if err != nil {
		t.Fatalf("strip: %v (%+v)", err, got)
	}
	if want := []string{"artifact", "sub", "suid"}; !slices.Equal(entries(t, p), want) {
		t.Errorf("left %v, want %v", entries(t, p), want)
	}
	if want := []string{"inner"}; !slices.Equal(entries(t, filepath.Join(p, "sub")), want) {
		t.Errorf("left in sub %v, want %v", entries(t, filepath.Join(p, "sub")), want)
	}
	for name, mode := range map[string]os.FileMode{"": 0o700, "artifact": 0o600, "suid": 0o600, "sub": 0o700, "sub/inner": 0o600} {
		var sys unix.Stat_t
		if err := unix.Lstat(filepath.Join(p, name), &sys); err != nil {
			t.Fatal(err)
		}
		if sys.Mode&0o7777 != uint32(mode) || int(sys.Uid) != os.Geteuid() || int(sys.Gid) != os.Getegid() {
			t.Errorf("%q: mode %#o uid %d gid %d, want %#o and ours", name, sys.Mode&0o7777, sys.Uid, sys.Gid, mode)
		}
	}
	if n, _ := unix.Listxattr(filepath.Join(p, "artifact"), make([]byte, 64)); n != 0 {
		t.Errorf("extended attributes left on the artifact")
	}
	if b, err := os.ReadFile(filepath.Join(target, "secret")); err != nil || string(b) != "SECRET" {
		t.Errorf("the hard link's target changed: %q %v", b, err)
	}
	if got.Removed < 4 || got.Xattrs != 1 || got.Modes < 2 {
		t.Errorf("counts %+v", got)
	}
}

func TestOpenDirFDReadsBeneathTheDescriptor(t *testing.T) {
	dir := t.TempDir()
	mustWrite(t, filepath.Join(dir, "x"), []byte("hello"))
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	d, err := OpenDirFD(fd, "tmpfs:test")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if b, err := d.ReadFile("x", 16); err != nil || string(b) != "hello" {
		t.Errorf("read %q %v", b, err)
	}
	if d.Path() != "tmpfs:test" {
		t.Errorf("path %q", d.Path())
	}
	f, _ := os.CreateTemp(t.TempDir(), "f")
	if _, err := OpenDirFD(int(f.Fd()), "file"); err == nil {
		t.Error("OpenDirFD took a regular file")
	}
}
