// Package gate is the wire between the supervisor's sandbox and the gated
// init, the C init of cmd/sandbox-gate, which runs from an ELF constructor
// before any Go runtime starts: it waits on the gate for its
// configuration, builds the jail, applies rlimits, drops capabilities,
// sets no_new_privs, Landlock and seccomp, then execs the worker
// (docs/sandbox.md, "Gate wire"). Every decision (which Landlock rights,
// which seccomp program) is made by the supervisor and arrives ready to
// apply, so the init stays mechanical. Decode is the wire's reference:
// FuzzCInitAgreesWithGo holds the C decoder to it.
package gate

// The gate carries one Config from the supervisor to the init and, in the
// other direction, JSON Status objects until the init's execve closes the
// (close-on-exec) descriptor. EOF after a status without Error therefore
// means the worker binary is running.

// Layout of the jail and the init's command line.
const (
	SocketDir  = "/run/plugin"
	WorkDir    = "/work"
	WorkerPath = "/bin/worker"
	TmpDir     = "/tmp"
	// Arg is argv[1] of a gated init; argv[2] is the gate descriptor.
	Arg          = "__cyber_sandbox_init"
	ExitNoConfig = 111 // the gate closed without a config: nothing ran
	ExitSetup    = 112 // setup failed; the reason went to the parent
)

// Config is what the init needs to build the worker's world.
type Config struct {
	Jail     *Jail
	Hostname string
	// Netns, when not 0, is an inherited descriptor of a network namespace
	// that the init joins (setns) before anything else, instead of the
	// fresh one a CLONE_NEWNET would have made (sandbox: netnsPool).
	Netns int
	// CgroupNS makes the init unshare its cgroup namespace (after Netns,
	// before the jail): it has been placed in its groups by then, so they
	// become the namespace's root and /proc/self/cgroup shows "/".
	CgroupNS bool
	Rlimits  []Rlimit
	// Identity, when set, is the host uid/gid the init switches to after
	// the jail is built (supplementary groups cleared): the worker runs as
	// that unprivileged identity. With Harden, the capability bounding
	// set is dropped before the switch and the rest after it.
	Identity *Identity
	// Harden empties every capability set and sets no_new_privs.
	Harden bool
	// Landlock, when set, is enforced after no_new_privs.
	Landlock *Landlock
	// Seccomp programs are loaded in order, last of all.
	Seccomp []BPF
	Path    string
	Args    []string
	Env     []string
}

// Jail is the layout of the worker's root. /work is either WorkDir
// (bind-mounted) or WorkMount, an inherited descriptor of a detached mount
// (fsmount(2): the supervisor's size-bounded tmpfs) that is attached
// there; exactly one of the two is set. The socket dir (/run/plugin) and
// /tmp are tmpfs the init mounts itself, of the given bounds: nothing a
// worker writes outside /work lands on a host file system.
type Jail struct {
	Root       string
	WorkerPath string
	WorkDir    string
	WorkMount  int
	// Sockets bounds /run/plugin, where the worker binds its socket. Its
	// root belongs to the worker (Identity, else the init's own uid),
	// mode 0700.
	Sockets Tmpfs
	// Tmp bounds /tmp (mode 1777).
	Tmp Tmpfs
}

// Tmpfs is the bound of a tmpfs the init mounts. Neither may be 0, which
// tmpfs reads as "no limit".
type Tmpfs struct {
	Bytes, Inodes uint64
}

// Identity is a uid and a gid.
type Identity struct {
	UID, GID uint32
}

// Rlimit is one resource limit, soft = hard.
type Rlimit struct {
	Resource uint32
	Value    uint64
}

// Landlock is a ruleset ready for landlock_create_ruleset: the handled
// access masks are already cut down to what the kernel's ABI knows, and
// each rule's rights to what its path kind allows.
type Landlock struct {
	ABI        uint32
	HandledFS  uint64
	HandledNet uint64
	Scoped     uint64
	Rules      []LandlockRule
}

// LandlockRule allows Access below (or on) the jail path Path.
type LandlockRule struct {
	Access uint64
	Path   string
}

// BPF is one classic BPF program for seccomp(SECCOMP_SET_MODE_FILTER).
type BPF []Instruction

// Instruction is struct sock_filter.
type Instruction struct {
	Code   uint16
	Jt, Jf uint8
	K      uint32
}

// Status is what the init reports on the gate.
type Status struct {
	Error string `json:"error,omitempty"`
	// Applied hardening, reported just before execve.
	LandlockABI int  `json:"landlock_abi,omitempty"`
	Seccomp     bool `json:"seccomp,omitempty"`
	NoNewPrivs  bool `json:"nnp,omitempty"`
	CapsDropped bool `json:"caps_dropped,omitempty"`
	Jail        bool `json:"jail,omitempty"`
	// Microseconds spent blocked on the gate, building the jail, and
	// applying the rest, for Report.
	GateUS   int64 `json:"gate_us,omitempty"`
	JailUS   int64 `json:"jail_us,omitempty"`
	HardenUS int64 `json:"harden_us,omitempty"`
}
