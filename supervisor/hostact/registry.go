// Package hostact is the registry of host acts: trusted Go functions that
// nox programs of the host-act environment reach through call (pattern
// 16) with a u64 tag. They run synchronously in the supervisor process
// (backend embedded-sync/1), only after the dispatch engine has claimed
// the attempt under the ward guard (docs/fencing.md). A node operator
// registers their own beside the built-ins emit and host.
package hostact

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// Tags of the built-in acts (the 0xAC75_0000_0000_00NN family).
const (
	TagEmit uint64 = 0xAC75000000000001
	TagHost uint64 = 0xAC75000000000006
)

// Call is what an act is given: the stored argument of an operation whose
// attempt has just been claimed, and the ids that locate it. It carries
// no key and no token.
type Call struct {
	Neuron     string
	Prog       string
	Invocation string
	Operation  string
	Attempt    uint32
	Generation uint64
	Tag        uint64
	Argument   noun.Noun
}

// Func is an act. It must return when ctx ends. A panic, or a Result
// made by Unknown, leaves the attempt unknown: only the owner's
// reconciliation resolves it then.
type Func func(ctx context.Context, c Call) Result

// Act is a registered act.
type Act struct {
	Name string
	Tag  uint64
	Func Func
}

// Registry maps tags to acts. It is safe for concurrent use; register
// acts before the engine binds its worker (the worker descriptor lists
// the tags registered then).
type Registry struct {
	mu     sync.RWMutex
	byTag  map[uint64]Act
	byName map[string]uint64
}

// Registration errors.
var (
	ErrDuplicate = errors.New("act already registered")
	ErrName      = errors.New("invalid act name")
	ErrUnknown   = errors.New("no such act")
)

// NewRegistry is an empty registry.
func NewRegistry() *Registry {
	return &Registry{byTag: map[uint64]Act{}, byName: map[string]uint64{}}
}

// Register adds an act under a name (lowercase letters, digits and
// dashes, starting with a letter, at most 64) and a tag; both must be
// new.
func (r *Registry) Register(name string, tag uint64, fn Func) error {
	if !validName(name) {
		return fmt.Errorf("register act %q: %w", name, ErrName)
	}
	if fn == nil {
		return fmt.Errorf("register act %q: no function", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.byTag[tag]; ok {
		return fmt.Errorf("register act %q: tag %#x: %w", name, tag, ErrDuplicate)
	}
	if _, ok := r.byName[name]; ok {
		return fmt.Errorf("register act %q: %w", name, ErrDuplicate)
	}
	r.byTag[tag] = Act{Name: name, Tag: tag, Func: fn}
	r.byName[name] = tag
	return nil
}

func validName(s string) bool {
	if len(s) == 0 || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// Lookup finds the act of a tag.
func (r *Registry) Lookup(tag uint64) (Act, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.byTag[tag]
	return a, ok
}

// Tags lists the registered tags in ascending order.
func (r *Registry) Tags() []uint64 {
	r.mu.RLock()
	defer r.mu.RUnlock()
	tags := make([]uint64, 0, len(r.byTag))
	for t := range r.byTag {
		tags = append(tags, t)
	}
	slices.Sort(tags)
	return tags
}

// Name of a tag's act, or the tag in hex when none is registered.
func (r *Registry) Name(tag uint64) string {
	if a, ok := r.Lookup(tag); ok {
		return a.Name
	}
	return FormatTag(tag)
}

// FormatTag writes a tag as 0x and 16 hex digits.
func FormatTag(tag uint64) string { return fmt.Sprintf("%#016x", tag) }

// Resolve reads an act named by its registered name or by its tag (0x
// hex or decimal). A tag need not be registered; a name must be.
func (r *Registry) Resolve(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		v, err := strconv.ParseUint(s[2:], 16, 64)
		if err != nil {
			return 0, fmt.Errorf("act %q: %w: not a hex tag", s, ErrUnknown)
		}
		return v, nil
	}
	if s != "" && s[0] >= '0' && s[0] <= '9' {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("act %q: %w: not a decimal tag", s, ErrUnknown)
		}
		return v, nil
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	tag, ok := r.byName[s]
	if !ok {
		return 0, fmt.Errorf("act %q: %w", s, ErrUnknown)
	}
	return tag, nil
}

// ResolveList reads a comma-separated list of acts into sorted unique
// tags.
func (r *Registry) ResolveList(s string) ([]uint64, error) {
	var tags []uint64
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		t, err := r.Resolve(part)
		if err != nil {
			return nil, err
		}
		tags = append(tags, t)
	}
	slices.Sort(tags)
	return slices.Compact(tags), nil
}
