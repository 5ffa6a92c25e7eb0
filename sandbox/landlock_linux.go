package sandbox

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/sandbox/gate"
)

// Landlock access rights (include/uapi/linux/landlock.h). The ABI that
// introduced each right decides whether the kernel can handle it.
const (
	llExecute    = 1 << 0
	llWriteFile  = 1 << 1
	llReadFile   = 1 << 2
	llReadDir    = 1 << 3
	llRemoveDir  = 1 << 4
	llRemoveFile = 1 << 5
	llMakeChar   = 1 << 6
	llMakeDir    = 1 << 7
	llMakeReg    = 1 << 8
	llMakeSock   = 1 << 9
	llMakeFifo   = 1 << 10
	llMakeBlock  = 1 << 11
	llMakeSym    = 1 << 12
	llRefer      = 1 << 13 // ABI 2
	llTruncate   = 1 << 14 // ABI 3
	llIoctlDev   = 1 << 15 // ABI 5

	llNetBindTCP    = 1 << 0 // ABI 4
	llNetConnectTCP = 1 << 1 // ABI 4

	llScopeAbstractUnix = 1 << 0 // ABI 6
	llScopeSignal       = 1 << 1 // ABI 6

	// Rights that apply to a file (the others only make sense on a
	// directory, and the kernel refuses them in a rule on a file).
	llFileRights = llExecute | llWriteFile | llReadFile | llTruncate | llIoctlDev
	llRead       = llExecute | llReadFile | llReadDir
	llAll        = 1<<16 - 1
	// llWritable is everything below a writable dir but running a file:
	// the worker binary is the one file of the jail that may execute, so
	// nothing the worker writes can become a program.
	llWritable = llAll &^ llExecute
)

// handledFS is every filesystem right the kernel of that ABI knows.
func handledFS(abi int) uint64 {
	m := uint64(1<<13 - 1)
	if abi >= 2 {
		m |= llRefer
	}
	if abi >= 3 {
		m |= llTruncate
	}
	if abi >= 5 {
		m |= llIoctlDev
	}
	return m
}

// landlockRules is the jail's policy, in jail paths: run and read the
// worker binary; read /proc and the random devices; write the null
// devices; everything but execute below the three writable dirs.
// Nothing else.
var landlockRules = []gate.LandlockRule{
	{Path: gate.WorkerPath, Access: llRead & llFileRights},
	{Path: "/proc", Access: llReadFile | llReadDir},
	{Path: "/dev/zero", Access: llRead & llFileRights},
	{Path: "/dev/random", Access: llRead & llFileRights},
	{Path: "/dev/urandom", Access: llRead & llFileRights},
	{Path: "/dev/null", Access: llFileRights},
	{Path: "/dev/full", Access: llFileRights},
	{Path: gate.WorkDir, Access: llWritable},
	{Path: gate.TmpDir, Access: llWritable},
	{Path: gate.SocketDir, Access: llWritable},
}

// landlockPlan is the ruleset for this kernel: every right its ABI can
// handle is handled (so denied unless a rule allows it), TCP bind and
// connect are handled with no rule (ABI >= 4), and signals and abstract
// unix sockets are scoped to the domain (ABI >= 6). On a kernel without
// Landlock it is nil, or an error when Landlock is required.
func landlockPlan(mode LandlockMode) (*gate.Landlock, error) {
	if mode == LandlockOff {
		return nil, nil
	}
	abi := landlockABI()
	if abi < 1 {
		if mode == LandlockRequired {
			return nil, fmt.Errorf("%w: Landlock required but this kernel has none", ErrSetup)
		}
		return nil, nil
	}
	l := &gate.Landlock{ABI: uint32(abi), HandledFS: handledFS(abi)}
	if abi >= 4 {
		l.HandledNet = llNetBindTCP | llNetConnectTCP
	}
	if abi >= 6 {
		l.Scoped = llScopeAbstractUnix | llScopeSignal
	}
	for _, r := range landlockRules {
		l.Rules = append(l.Rules, gate.LandlockRule{Path: r.Path, Access: r.Access & l.HandledFS})
	}
	return l, nil
}

// landlockABI is the kernel's Landlock ABI version, 0 without Landlock,
// asked once. The supervisor and its workers share the kernel, so asking
// here is asking for them.
var landlockABI = sync.OnceValue(func() int {
	const createRulesetVersion = 1 << 0
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if errno != 0 {
		return 0
	}
	return int(v)
})
