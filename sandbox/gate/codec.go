package gate

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Magic opens every encoded Config; its last digit is the wire version.
const Magic = "CSGATE5\n"

// MaxConfigBytes bounds an encoded Config (the environment is the only
// part of any size).
const MaxConfigBytes = 1 << 20

// Record tags. A record is tag (1 byte), length (4 bytes, little endian),
// value. Strings carry no NUL; integers are little endian.
const (
	tagPath         = 1  // string, once
	tagArg          = 2  // string, repeated, at least one
	tagEnv          = 3  // string, repeated
	tagHostname     = 4  // string
	tagRlimit       = 5  // u32 resource, u64 value
	tagJailRoot     = 6  // string; the five jail records come together
	tagJailWorker   = 7  // string
	tagJailWork     = 8  // string (or tagJailWorkFD in its place)
	tagJailSockets  = 9  // u64 bytes, u64 inodes of the socket dir's tmpfs
	tagJailTmpfs    = 10 // u64 bytes, u64 inodes of /tmp
	tagHarden       = 11 // empty
	tagLandlock     = 12 // u32 abi, u64 fs, u64 net, u64 scoped
	tagLandlockRule = 13 // u64 access, string path
	tagSeccomp      = 14 // n * 8 bytes of struct sock_filter
	tagNetns        = 15 // u32 descriptor of a network namespace to join
	tagCgroupNS     = 16 // empty: unshare the cgroup namespace
	tagJailWorkFD   = 17 // u32 descriptor of a detached mount for /work
	tagIdentity     = 18 // u32 uid, u32 gid
)

// maxFD bounds the inherited descriptors the wire names.
const maxFD = 1 << 20

// Counts the inits hold in fixed tables (the C init, init.h, has the same).
const (
	maxList      = 4096 // arguments; environment entries
	maxRlimits   = 16
	maxRules     = 64
	maxPrograms  = 8
	maxBPFInstrs = 4096
)

// ErrWire reports a Config that cannot be encoded or decoded.
var ErrWire = errors.New("gate: bad config")

// Encode returns the wire form of c.
func (c *Config) Encode() ([]byte, error) {
	b := []byte(Magic)
	var bad error
	str := func(tag byte, s string) {
		if strings.IndexByte(s, 0) >= 0 {
			bad = fmt.Errorf("%w: NUL in %q", ErrWire, s)
		}
		b = record(b, tag, []byte(s))
	}
	if c.Path == "" || len(c.Args) == 0 {
		return nil, fmt.Errorf("%w: no program", ErrWire)
	}
	str(tagPath, c.Path)
	for _, a := range c.Args {
		str(tagArg, a)
	}
	for _, e := range c.Env {
		str(tagEnv, e)
	}
	if c.Hostname != "" {
		str(tagHostname, c.Hostname)
	}
	for _, r := range c.Rlimits {
		v := binary.LittleEndian.AppendUint32(nil, r.Resource)
		b = record(b, tagRlimit, binary.LittleEndian.AppendUint64(v, r.Value))
	}
	if j := c.Jail; j != nil {
		str(tagJailRoot, j.Root)
		str(tagJailWorker, j.WorkerPath)
		switch {
		case (j.WorkDir == "") == (j.WorkMount == 0):
			return nil, fmt.Errorf("%w: the jail needs exactly one of a work dir and a work mount", ErrWire)
		case j.WorkMount != 0:
			if j.WorkMount < 3 || j.WorkMount > maxFD {
				return nil, fmt.Errorf("%w: work mount descriptor %d", ErrWire, j.WorkMount)
			}
			b = record(b, tagJailWorkFD, binary.LittleEndian.AppendUint32(nil, uint32(j.WorkMount)))
		default:
			str(tagJailWork, j.WorkDir)
		}
		for _, t := range []struct {
			tag byte
			fs  Tmpfs
		}{{tagJailSockets, j.Sockets}, {tagJailTmpfs, j.Tmp}} {
			if t.fs.Bytes == 0 || t.fs.Inodes == 0 {
				return nil, fmt.Errorf("%w: unbounded tmpfs (record %d: %d bytes, %d inodes)", ErrWire, t.tag, t.fs.Bytes, t.fs.Inodes)
			}
			v := binary.LittleEndian.AppendUint64(nil, t.fs.Bytes)
			b = record(b, t.tag, binary.LittleEndian.AppendUint64(v, t.fs.Inodes))
		}
	}
	if c.Harden {
		b = record(b, tagHarden, nil)
	}
	if c.CgroupNS {
		b = record(b, tagCgroupNS, nil)
	}
	if id := c.Identity; id != nil {
		if id.UID == 0 || id.GID == 0 || id.UID == ^uint32(0) || id.GID == ^uint32(0) {
			return nil, fmt.Errorf("%w: identity %d:%d", ErrWire, id.UID, id.GID)
		}
		v := binary.LittleEndian.AppendUint32(nil, id.UID)
		b = record(b, tagIdentity, binary.LittleEndian.AppendUint32(v, id.GID))
	}
	if c.Netns != 0 {
		if c.Netns < 3 {
			return nil, fmt.Errorf("%w: network namespace descriptor %d", ErrWire, c.Netns)
		}
		b = record(b, tagNetns, binary.LittleEndian.AppendUint32(nil, uint32(c.Netns)))
	}
	if l := c.Landlock; l != nil {
		v := binary.LittleEndian.AppendUint32(nil, l.ABI)
		v = binary.LittleEndian.AppendUint64(v, l.HandledFS)
		v = binary.LittleEndian.AppendUint64(v, l.HandledNet)
		b = record(b, tagLandlock, binary.LittleEndian.AppendUint64(v, l.Scoped))
		for _, r := range l.Rules {
			if strings.IndexByte(r.Path, 0) >= 0 {
				bad = fmt.Errorf("%w: NUL in %q", ErrWire, r.Path)
			}
			v := binary.LittleEndian.AppendUint64(nil, r.Access)
			b = record(b, tagLandlockRule, append(v, r.Path...))
		}
	}
	for _, p := range c.Seccomp {
		if len(p) == 0 || len(p) > maxBPFInstrs {
			return nil, fmt.Errorf("%w: seccomp program of %d instructions", ErrWire, len(p))
		}
		v := make([]byte, 0, 8*len(p))
		for _, in := range p {
			v = binary.LittleEndian.AppendUint16(v, in.Code)
			v = append(v, in.Jt, in.Jf)
			v = binary.LittleEndian.AppendUint32(v, in.K)
		}
		b = record(b, tagSeccomp, v)
	}
	if bad != nil {
		return nil, bad
	}
	if len(c.Args) > maxList || len(c.Env) > maxList || len(c.Rlimits) > maxRlimits || len(c.Seccomp) > maxPrograms ||
		(c.Landlock != nil && len(c.Landlock.Rules) > maxRules) {
		return nil, fmt.Errorf("%w: more entries than an init holds", ErrWire)
	}
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrWire, len(b), MaxConfigBytes)
	}
	return b, nil
}

func record(b []byte, tag byte, v []byte) []byte {
	b = append(b, tag)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(v)))
	return append(b, v...)
}

// Decode parses the wire form; it accepts exactly what Encode produces
// (any record order, but every record well formed and known).
func Decode(b []byte) (*Config, error) {
	if len(b) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrWire, len(b), MaxConfigBytes)
	}
	if !strings.HasPrefix(string(b), Magic) {
		return nil, fmt.Errorf("%w: no %q header (another wire version?)", ErrWire, strings.TrimSpace(Magic))
	}
	b = b[len(Magic):]
	c := &Config{}
	var j Jail
	jailSeen := 0 // one bit per jail record
	pathSeen := false
	for len(b) > 0 {
		if len(b) < 5 {
			return nil, fmt.Errorf("%w: truncated record header", ErrWire)
		}
		tag, n := b[0], binary.LittleEndian.Uint32(b[1:5])
		if uint64(n) > uint64(len(b)-5) {
			return nil, fmt.Errorf("%w: record %d of %d bytes overruns the config", ErrWire, tag, n)
		}
		v := b[5 : 5+n]
		b = b[5+n:]
		str := func() (string, error) {
			if strings.IndexByte(string(v), 0) >= 0 {
				return "", fmt.Errorf("%w: NUL in record %d", ErrWire, tag)
			}
			return string(v), nil
		}
		fixed := func(want int) error {
			if len(v) != want {
				return fmt.Errorf("%w: record %d has %d bytes, want %d", ErrWire, tag, len(v), want)
			}
			return nil
		}
		var err error
		if tag >= tagJailRoot && tag <= tagJailTmpfs || tag == tagJailWorkFD {
			bit := 1 << (tag - tagJailRoot)
			if tag == tagJailWorkFD {
				bit = 1 << (tagJailWork - tagJailRoot) // one or the other
			}
			if jailSeen&bit != 0 {
				return nil, fmt.Errorf("%w: jail record %d twice", ErrWire, tag)
			}
			jailSeen |= bit
		}
		switch tag {
		case tagPath:
			if pathSeen {
				return nil, fmt.Errorf("%w: two program paths", ErrWire)
			}
			pathSeen = true
			c.Path, err = str()
		case tagArg:
			if len(c.Args) == maxList {
				return nil, fmt.Errorf("%w: too many arguments", ErrWire)
			}
			var s string
			s, err = str()
			c.Args = append(c.Args, s)
		case tagEnv:
			if len(c.Env) == maxList {
				return nil, fmt.Errorf("%w: too many environment entries", ErrWire)
			}
			var s string
			s, err = str()
			c.Env = append(c.Env, s)
		case tagHostname:
			c.Hostname, err = str()
		case tagRlimit:
			if len(c.Rlimits) == maxRlimits {
				return nil, fmt.Errorf("%w: too many rlimits", ErrWire)
			}
			if err = fixed(12); err == nil {
				c.Rlimits = append(c.Rlimits, Rlimit{Resource: binary.LittleEndian.Uint32(v), Value: binary.LittleEndian.Uint64(v[4:])})
			}
		case tagJailRoot:
			j.Root, err = str()
		case tagJailWorker:
			j.WorkerPath, err = str()
		case tagJailWork:
			if len(v) == 0 {
				return nil, fmt.Errorf("%w: empty work dir", ErrWire)
			}
			j.WorkDir, err = str()
		case tagJailWorkFD:
			if err = fixed(4); err == nil {
				fd := binary.LittleEndian.Uint32(v)
				if fd < 3 || fd > maxFD {
					return nil, fmt.Errorf("%w: work mount descriptor %d", ErrWire, fd)
				}
				j.WorkMount = int(fd)
			}
		case tagJailSockets, tagJailTmpfs:
			if err = fixed(16); err == nil {
				fs := Tmpfs{Bytes: binary.LittleEndian.Uint64(v), Inodes: binary.LittleEndian.Uint64(v[8:])}
				if fs.Bytes == 0 || fs.Inodes == 0 {
					return nil, fmt.Errorf("%w: unbounded tmpfs (record %d)", ErrWire, tag)
				}
				if tag == tagJailSockets {
					j.Sockets = fs
				} else {
					j.Tmp = fs
				}
			}
		case tagHarden:
			err = fixed(0)
			c.Harden = true
		case tagCgroupNS:
			err = fixed(0)
			c.CgroupNS = true
		case tagIdentity:
			if c.Identity != nil {
				return nil, fmt.Errorf("%w: two identities", ErrWire)
			}
			if err = fixed(8); err == nil {
				id := &Identity{UID: binary.LittleEndian.Uint32(v), GID: binary.LittleEndian.Uint32(v[4:])}
				// Root is no identity to switch to, -1 no id at all.
				if id.UID == 0 || id.GID == 0 || id.UID == ^uint32(0) || id.GID == ^uint32(0) {
					return nil, fmt.Errorf("%w: identity %d:%d", ErrWire, id.UID, id.GID)
				}
				c.Identity = id
			}
		case tagNetns:
			if c.Netns != 0 {
				return nil, fmt.Errorf("%w: two network namespaces", ErrWire)
			}
			if err = fixed(4); err == nil {
				fd := binary.LittleEndian.Uint32(v)
				if fd < 3 || fd > maxFD {
					return nil, fmt.Errorf("%w: network namespace descriptor %d", ErrWire, fd)
				}
				c.Netns = int(fd)
			}
		case tagLandlock:
			if c.Landlock != nil {
				return nil, fmt.Errorf("%w: two Landlock rulesets", ErrWire)
			}
			if err = fixed(28); err == nil {
				c.Landlock = &Landlock{ABI: binary.LittleEndian.Uint32(v), HandledFS: binary.LittleEndian.Uint64(v[4:]),
					HandledNet: binary.LittleEndian.Uint64(v[12:]), Scoped: binary.LittleEndian.Uint64(v[20:])}
			}
		case tagLandlockRule:
			if c.Landlock == nil {
				return nil, fmt.Errorf("%w: Landlock rule before its ruleset", ErrWire)
			}
			if len(v) < 9 || len(c.Landlock.Rules) == maxRules {
				return nil, fmt.Errorf("%w: bad Landlock rule record", ErrWire)
			}
			acc := binary.LittleEndian.Uint64(v)
			v = v[8:]
			var p string
			if p, err = str(); err == nil {
				c.Landlock.Rules = append(c.Landlock.Rules, LandlockRule{Access: acc, Path: p})
			}
		case tagSeccomp:
			if len(v) == 0 || len(v)%8 != 0 || len(v) > 8*maxBPFInstrs || len(c.Seccomp) == maxPrograms {
				return nil, fmt.Errorf("%w: seccomp program of %d bytes", ErrWire, len(v))
			}
			p := make(BPF, len(v)/8)
			for i := range p {
				w := v[8*i:]
				p[i] = Instruction{Code: binary.LittleEndian.Uint16(w), Jt: w[2], Jf: w[3], K: binary.LittleEndian.Uint32(w[4:])}
			}
			c.Seccomp = append(c.Seccomp, p)
		default:
			return nil, fmt.Errorf("%w: unknown record %d", ErrWire, tag)
		}
		if err != nil {
			return nil, err
		}
	}
	switch jailSeen {
	case 0:
	case 1<<5 - 1:
		c.Jail = &j
	default:
		return nil, fmt.Errorf("%w: incomplete jail (records %05b)", ErrWire, jailSeen)
	}
	if c.Path == "" || len(c.Args) == 0 {
		return nil, fmt.Errorf("%w: no program", ErrWire)
	}
	return c, nil
}
