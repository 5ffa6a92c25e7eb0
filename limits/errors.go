package limits

import "errors"

// Sentinel errors. Callers match them with errors.Is; the wrapped message
// names the operation and the path or limit involved.
var (
	// ErrUnsupportedLimit means a Spec asks for a limit this host does not
	// enforce. The supervisor maps it to the unsupported_limit error code.
	ErrUnsupportedLimit = errors.New("limit not enforceable on this host")

	// ErrCgroupsUnavailable means no cgroup can be created here (not root,
	// no cgroupfs, or no writable hierarchy). Jobs that ask for no hard
	// limits can still run without a group.
	ErrCgroupsUnavailable = errors.New("cgroups unavailable")

	// ErrInvalidSpec means a Spec holds values no kernel accepts
	// (negative values, a cpu period out of range, ...).
	ErrInvalidSpec = errors.New("invalid limits spec")

	// ErrInvalidName means a group or parent name is not a single, plain
	// path element.
	ErrInvalidName = errors.New("invalid cgroup name")

	// ErrExists means a group of that name already exists in this instance.
	ErrExists = errors.New("cgroup already exists")

	// ErrNotEmpty means a group still holds processes; Kill it first.
	ErrNotEmpty = errors.New("cgroup still has processes")

	// ErrDeleted means the group was deleted before its result was read.
	ErrDeleted = errors.New("cgroup deleted")

	// ErrKillIncomplete means the group was still populated when the
	// kill's context ended.
	ErrKillIncomplete = errors.New("cgroup still populated after kill")
)
