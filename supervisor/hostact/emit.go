package hostact

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/cyberia-to/cyber-supervisor/noxrunner/noun"
)

// EmitFile is the effect log of the emit act, in <home>/effects.
const EmitFile = "emit.jsonl"

// maxArgumentText bounds the text form of an emitted argument.
const maxArgumentText = 16 << 20

// Emitter is the emit act's effect: one JSON line per call appended to
// <home>/effects/emit.jsonl and synced before the call returns. It is an
// external effect that no store transaction can roll back, which is what
// fencing protects: a line is written at most once per operation as long
// as every attempt goes through the claim. The log also keeps that rule
// itself: it never appends an operation it already holds (emitlog.go),
// whatever the store says (a store restored from a backup forgets the
// lines written after it).
type Emitter struct {
	mu    sync.Mutex
	path  string
	f     *os.File
	lines uint64
	size  int64 // bytes of whole lines
	index opIndex
	last  LineIDs // the last line's operation and attempt
	// Torn is how many bytes of an incomplete last line were cut when
	// the file was opened (a write the system lost in a crash).
	Torn int64
}

// EffectsDir is the effects directory of a home.
func EffectsDir(home string) string { return filepath.Join(home, "effects") }

// OpenEmitter opens (creating) the effect log in dir and counts its
// lines. An incomplete last line — a write that a power loss cut — is
// removed, so that every line is whole; Torn says how many bytes went.
func OpenEmitter(dir string) (*Emitter, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create effects dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, EmitFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	e := &Emitter{path: path, f: f}
	if err := e.count(); err != nil {
		f.Close()
		return nil, err
	}
	return e, nil
}

// count reads the file once: its lines, the operation each one holds
// (the index that keeps an operation from being written twice), and
// where the last whole line ends.
func (e *Emitter) count() error {
	if _, err := e.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("read %s: %w", e.path, err)
	}
	e.index = newOpIndex()
	size, lastEnd, err := scanLines(e.f, func(off int64, prefix []byte) {
		e.lines++
		ids := parseLineIDs(prefix)
		e.index.add(ids.Operation, off, e.lines)
		e.last = ids
	})
	if err != nil {
		return fmt.Errorf("read %s: %w", e.path, err)
	}
	e.size = lastEnd
	if lastEnd < size {
		if err := e.f.Truncate(lastEnd); err != nil {
			return fmt.Errorf("cut the torn last line of %s: %w", e.path, err)
		}
		if err := e.f.Sync(); err != nil {
			return fmt.Errorf("sync %s: %w", e.path, err)
		}
		e.Torn = size - lastEnd
	}
	return nil
}

// Path of the effect log.
func (e *Emitter) Path() string { return e.path }

// Lines written so far (including those of earlier processes).
func (e *Emitter) Lines() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lines
}

// EmitLine is one line of emit.jsonl.
type EmitLine struct {
	Neuron     string `json:"neuron"`
	Prog       string `json:"prog"`
	Invocation string `json:"invocation"`
	Operation  string `json:"operation"`
	Attempt    string `json:"attempt"`
	Generation string `json:"generation"`
	Argument   string `json:"argument"` // the argument noun in nox text syntax
}

// Emit is the emit act: it appends the line, syncs it, and returns its
// 1-based line number as an atom. If the write or the sync fails the
// line may or may not be on disk: the result is unknown.
func (e *Emitter) Emit(ctx context.Context, c Call) Result {
	arg, err := noun.AppendText(nil, c.Argument, maxArgumentText)
	if err != nil {
		return Failed("emit: the argument is too large to write")
	}
	line, err := json.Marshal(EmitLine{
		Neuron: c.Neuron, Prog: c.Prog, Invocation: c.Invocation, Operation: c.Operation,
		Attempt: strconv.FormatUint(uint64(c.Attempt), 10), Generation: strconv.FormatUint(c.Generation, 10),
		Argument: string(arg),
	})
	if err != nil {
		return Failed("emit: encode the line")
	}
	line = append(line, '\n')
	if err := ctx.Err(); err != nil {
		return Failed("emit: cancelled before writing")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.f == nil {
		return Failed("emit: the effect log is closed")
	}
	if n, held := e.index.find(e.f, c.Operation); held {
		// The effect of this operation is in the log already: it is
		// never written twice. Whether that line is this call's answer is
		// the owner's to say (a restored store may have forgotten it).
		return Unknown(fmt.Sprintf("emit: operation %s is already in %s at line %d: it is not written again; reconcile it with that line", c.Operation, e.path, n))
	}
	off := e.size
	if _, err := e.f.Write(line); err != nil {
		e.resync()
		return Unknown("emit: write " + e.path + ": " + err.Error())
	}
	e.lines++
	e.size += int64(len(line))
	// Indexed before the sync: a line that may be on disk counts as
	// written.
	e.index.add(c.Operation, off, e.lines)
	e.last = LineIDs{Operation: c.Operation, Attempt: c.Attempt}
	if err := e.f.Sync(); err != nil {
		return Unknown("emit: sync " + e.path + ": " + err.Error())
	}
	return Value(noun.Atom(e.lines))
}

// resync reads the log again after a write that failed part way: the
// line may be there in part or whole, and the next one must start after
// it. A log that cannot be read again is closed (every later call
// fails): its lines could no longer be counted.
func (e *Emitter) resync() {
	e.lines, e.size, e.last = 0, 0, LineIDs{}
	if err := e.count(); err != nil {
		e.f.Close()
		e.f = nil
	}
}

// Last is the operation and attempt of the log's last line (ok false for
// an empty log).
func (e *Emitter) Last() (LineIDs, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last, e.lines > 0
}

// Holds reports whether the log holds a line of operation op, and which.
func (e *Emitter) Holds(op string) (uint64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.f == nil {
		return 0, false
	}
	return e.index.find(e.f, op)
}

// Close the log.
func (e *Emitter) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.f == nil {
		return nil
	}
	err := e.f.Close()
	e.f = nil
	return err
}

// ReadEmitLog reads every line of an effect log (for tests and tools).
func ReadEmitLog(path string) ([]EmitLine, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []EmitLine
	for i, l := range bytes.Split(bytes.TrimSuffix(raw, []byte{'\n'}), []byte{'\n'}) {
		if len(l) == 0 {
			continue
		}
		var e EmitLine
		if err := json.Unmarshal(l, &e); err != nil {
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		out = append(out, e)
	}
	return out, nil
}
