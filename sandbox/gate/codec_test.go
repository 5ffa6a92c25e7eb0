package gate

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

// sample is a Config with every kind of record.
func sample() *Config {
	return &Config{
		Jail: &Jail{Root: "/r", WorkerPath: "/w/nox-worker", WorkDir: "/a/1",
			Sockets: Tmpfs{Bytes: 4096, Inodes: 8}, Tmp: Tmpfs{Bytes: 16 << 20, Inodes: 1024}},
		Hostname: "sandbox",
		Netns:    4,
		Rlimits:  []Rlimit{{Resource: 7, Value: 256}, {Resource: 4, Value: 0}},
		Harden:   true,
		Landlock: &Landlock{ABI: 7, HandledFS: 0xffff, HandledNet: 3, Scoped: 3,
			Rules: []LandlockRule{{Access: 5, Path: "/bin/worker"}, {Access: 0xffff, Path: "/work"}}},
		Seccomp: []BPF{{{Code: 0x20, K: 4}, {Code: 6, K: 0x7fff0000}}},
		Path:    "/bin/worker",
		Args:    []string{"worker", ""},
		Env:     []string{"A=1", "GOMAXPROCS=1"},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	mounted := sample()
	mounted.Jail.WorkDir, mounted.Jail.WorkMount, mounted.CgroupNS = "", 5, true
	mounted.Identity = &Identity{UID: 0x70000000, GID: 0x70000001}
	for _, c := range []*Config{sample(), mounted, {Path: "/x", Args: []string{"x"}}} {
		b, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("round trip:\n got %+v\nwant %+v", got, c)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	good, err := sample().Encode()
	if err != nil {
		t.Fatal(err)
	}
	rec := func(tag byte, v string) []byte { return record(nil, tag, []byte(v)) }
	prog := append(rec(tagPath, "/x"), rec(tagArg, "x")...)
	cases := map[string][]byte{
		"empty":             nil,
		"other version":     append([]byte("CSGATE1\n"), prog...),
		"truncated header":  append([]byte(Magic), 1, 0, 0),
		"overrun":           append([]byte(Magic), 1, 9, 0, 0, 0, '/'),
		"unknown record":    append(append([]byte(Magic), prog...), rec(99, "")...),
		"NUL in path":       append([]byte(Magic), append(rec(tagPath, "/x\x00"), rec(tagArg, "x")...)...),
		"no program":        append([]byte(Magic), rec(tagArg, "x")...),
		"empty path":        append([]byte(Magic), append(rec(tagPath, ""), rec(tagArg, "x")...)...),
		"no argv":           append([]byte(Magic), rec(tagPath, "/x")...),
		"two paths":         append(append([]byte(Magic), prog...), rec(tagPath, "/y")...),
		"incomplete jail":   append(append([]byte(Magic), prog...), rec(tagJailRoot, "/r")...),
		"jail record twice": append(append(append([]byte(Magic), prog...), rec(tagJailRoot, "/r")...), rec(tagJailRoot, "/r")...),
		"rule before set":   append(append([]byte(Magic), prog...), rec(tagLandlockRule, "\x05\x00\x00\x00\x00\x00\x00\x00/p")...),
		"odd seccomp":       append(append([]byte(Magic), prog...), rec(tagSeccomp, "1234567")...),
		"short rlimit":      append(append([]byte(Magic), prog...), rec(tagRlimit, "12345678")...),
		"harden with value": append(append([]byte(Magic), prog...), rec(tagHarden, "x")...),
		"netns stdin":       append(append([]byte(Magic), prog...), rec(tagNetns, "\x00\x00\x00\x00")...),
		"netns short":       append(append([]byte(Magic), prog...), rec(tagNetns, "\x04\x00")...),
		"two netns":         append(append(append([]byte(Magic), prog...), rec(tagNetns, "\x04\x00\x00\x00")...), rec(tagNetns, "\x05\x00\x00\x00")...),
		"cgroupns value":    append(append([]byte(Magic), prog...), rec(tagCgroupNS, "x")...),
		"work mount stdin":  append(append([]byte(Magic), prog...), rec(tagJailWorkFD, "\x01\x00\x00\x00")...),
		"work dir and mount": append(append(append([]byte(Magic), prog...), rec(tagJailWork, "/a")...),
			rec(tagJailWorkFD, "\x05\x00\x00\x00")...),
		"empty work dir": append(append([]byte(Magic), prog...), rec(tagJailWork, "")...),
		"identity root":  append(append([]byte(Magic), prog...), rec(tagIdentity, "\x00\x00\x00\x00\x05\x00\x00\x00")...),
		"identity -1":    append(append([]byte(Magic), prog...), rec(tagIdentity, "\x05\x00\x00\x00\xff\xff\xff\xff")...),
		"identity short": append(append([]byte(Magic), prog...), rec(tagIdentity, "\x05\x00\x00\x00")...),
		"two identities": append(append(append([]byte(Magic), prog...), rec(tagIdentity, "\x05\x00\x00\x00\x05\x00\x00\x00")...),
			rec(tagIdentity, "\x06\x00\x00\x00\x06\x00\x00\x00")...),
		"sockets as a path": append(append([]byte(Magic), prog...), rec(tagJailSockets, "/run/cs/plugin-dir1")...),
		"tmp bytes only":    append(append([]byte(Magic), prog...), rec(tagJailTmpfs, "\x00\x00\x01\x00\x00\x00\x00\x00")...),
		"unbounded sockets": append(append([]byte(Magic), prog...), rec(tagJailSockets, "\x00\x00\x00\x00\x00\x00\x00\x00\x08\x00\x00\x00\x00\x00\x00\x00")...),
		"unbounded tmp inodes": append(append([]byte(Magic), prog...),
			rec(tagJailTmpfs, "\x00\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00")...),
		"cut short": good[:len(good)-1],
	}
	for name, b := range cases {
		if _, err := Decode(b); !errors.Is(err, ErrWire) {
			t.Errorf("%s: err = %v, want ErrWire", name, err)
		}
	}
	big := bytes.Repeat([]byte{0}, MaxConfigBytes+1)
	if _, err := Decode(big); !errors.Is(err, ErrWire) {
		t.Errorf("oversize: %v", err)
	}
	bad := sample()
	bad.Env = append(bad.Env, "X=\x00")
	if _, err := bad.Encode(); !errors.Is(err, ErrWire) {
		t.Errorf("Encode with NUL: %v", err)
	}
	bad = sample()
	bad.Jail.WorkMount = 5
	if _, err := bad.Encode(); !errors.Is(err, ErrWire) {
		t.Errorf("Encode with a work dir and a work mount: %v", err)
	}
	for _, unbounded := range []func(j *Jail){
		func(j *Jail) { j.Sockets.Bytes = 0 }, func(j *Jail) { j.Sockets.Inodes = 0 },
		func(j *Jail) { j.Tmp.Bytes = 0 }, func(j *Jail) { j.Tmp.Inodes = 0 },
	} {
		bad = sample()
		unbounded(bad.Jail)
		if _, err := bad.Encode(); !errors.Is(err, ErrWire) {
			t.Errorf("Encode with an unbounded tmpfs %+v %+v: %v", bad.Jail.Sockets, bad.Jail.Tmp, err)
		}
	}
	bad = sample()
	bad.Netns = 2
	if _, err := bad.Encode(); !errors.Is(err, ErrWire) {
		t.Errorf("Encode with netns fd 2: %v", err)
	}
}

// FuzzDecode: no input panics, and whatever decodes encodes back to the
// same meaning.
func FuzzDecode(f *testing.F) {
	good, _ := sample().Encode()
	f.Add(good)
	f.Add([]byte(Magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Decode(b)
		if err != nil {
			return
		}
		again, err := c.Encode()
		if err != nil {
			t.Fatalf("decoded config does not encode: %v", err)
		}
		c2, err := Decode(again)
		if err != nil || !reflect.DeepEqual(c, c2) {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, c, c2)
		}
	})
}
