package bolt

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"runtime/debug"

	"golang.org/x/sys/unix"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// checkFile reads a bbolt file (its meta pages with plain reads, the
// pages they lead to mapped read-only, each offset bounded before it is
// read) and checks everything bbolt would otherwise trust: both meta pages, then every page reachable from
// the root, with bounds on every offset, the page types, the key order,
// no page reached twice, and the checksum of every sealed record. It runs
// before bbolt maps the file (through Options.OpenFile, with the file
// already locked), because bbolt dereferences page ids and offsets from
// the file without checks: a damaged page makes it panic, some of it in a
// goroutine of its own where nothing can recover the panic, or fault on
// memory beyond the mapping, which kills the process outright. After this
// check passes, bbolt reads only pages and offsets that were checked.
//
// The walk is iterative: a damaged file cannot make it recurse. Only
// the pages below the high-water mark, which the meta page says are in
// the file, are mapped; a fault on them (the file shrank under the
// check) is an error.

// The bbolt file format (go.etcd.io/bbolt, internal/common), native
// endian: a page starts with a 16-byte header {id u64, flags u16, count
// u16, overflow u32}; a meta page holds, after it, {magic u32, version
// u32, page size u32, flags u32, root bucket {root page u64, sequence
// u64}, freelist page u64, high-water page u64, txid u64, checksum u64}
// whose checksum is FNV-1a 64 of everything before it. Branch elements
// are {pos u32, key size u32, child page u64}, leaf elements {flags u32,
// pos u32, key size u32, value size u32}; pos counts from the element. A
// bucket's value is {root page u64, sequence u64}, followed by an inline
// leaf page when the root is 0.
const (
	boltMagic        = 0xED0CDAED
	boltVersion      = 2
	pageHeaderSize   = 16
	elementSize      = 16
	metaSize         = 64
	metaSumOffset    = 56
	bucketHeaderSize = 16
	branchPageFlag   = 0x01
	leafPageFlag     = 0x02
	metaPageFlag     = 0x04
	freelistPageFlag = 0x10
	bucketLeafFlag   = 0x01
	noFreelist       = ^uint64(0)
	minPageSize      = 512
	maxPageSize      = 1 << 16
	maxTreeDepth     = 64
)

var native = binary.NativeEndian

// fileReport is what checkFile found in a sound file.
type fileReport struct {
	PageSize int
	Pages    uint64 // the high-water mark: pages in use or free
	Txid     uint64
	Records  int
	// Sealed is true when the meta record is sealed (schema 3 on): then
	// every record was checked against its checksum if Schema, the
	// sealed meta record's version, is 3 to this build's. Records of
	// schemas 1 and 2 carry no seal; they are checked when migrated.
	Sealed bool
	Schema int
}

type boltMeta struct {
	pageSize uint32
	root     uint64
	freelist uint64
	pgid     uint64
	txid     uint64
}

type pageChecker struct {
	f        io.ReaderAt
	path     string
	size     int64
	pageSize uint64
	hwm      uint64
	// used maps the file's pages below the high-water mark (nil: each
	// page is read on its own).
	used      []byte
	reached   []bool
	records   int
	badRecord *store.CorruptError // the first record whose checksum failed
	metaRaw   []byte              // the value of meta/meta, if found
}

// walkItem is a page (or an inline page, when inline is set) waiting to
// be checked, with the key range its keys must fall in and the bucket it
// belongs to ("" for the root bucket, whose values are buckets).
type walkItem struct {
	page   uint64
	inline []byte
	lo, hi []byte // lo ≤ key < hi; nil: unbounded
	bucket []byte
	depth  int
	child  bool // reached through a branch (not a bucket's root)
}

func checkFile(f *os.File) (*fileReport, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat store %s: %w", f.Name(), err)
	}
	if st.Size() == 0 {
		return &fileReport{}, nil // bbolt initializes it
	}
	return checkPages(f, f.Name(), st.Size())
}

func checkPages(f io.ReaderAt, path string, size int64) (rep *fileReport, err error) {
	c := &pageChecker{f: f, path: path, size: size}
	m, err := c.metas()
	if err != nil {
		return nil, err
	}
	c.pageSize, c.hwm = uint64(m.pageSize), m.pgid
	if unmap := c.mapUsed(); unmap != nil {
		defer unmap()
		defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
		defer func() {
			if r := recover(); r != nil {
				rep = nil
				c.faulted(r, &err)
			}
		}()
	}
	c.reached = make([]bool, c.hwm)
	c.reached[0], c.reached[1] = true, true
	var free []uint64
	if m.freelist != noFreelist {
		if free, err = c.checkFreelist(m.freelist); err != nil {
			return nil, err
		}
	}
	if err := c.walk(m.root); err != nil {
		return nil, err
	}
	for _, id := range free {
		if c.reached[id] {
			// bbolt would hand the page out again and overwrite live data.
			return nil, c.damaged(id, "listed as free but in use")
		}
	}
	rep = &fileReport{PageSize: int(m.pageSize), Pages: m.pgid, Txid: m.txid, Records: c.records}
	if c.metaRaw != nil {
		if p, ok := unseal(bucketMeta, keyMeta, c.metaRaw); ok {
			var m store.Meta
			rep.Sealed = true
			rep.Schema = -1
			if json.Unmarshal(p, &m) == nil {
				rep.Schema = m.SchemaVersion
			}
		}
	}
	// The seal has not changed since schema 3, and every bucket of an
	// older schema is one of this build's: a sealed store of schema 3 to
	// this one is judged by its seals, so that a damaged record is
	// refused before a migration could write it into this schema. A
	// newer schema's records (and buckets) are not judged: opening
	// refuses that store with ErrSchema.
	if rep.Sealed && rep.Schema >= 3 && rep.Schema <= SchemaVersion && c.badRecord != nil {
		return nil, c.badRecord
	}
	return rep, nil
}

func (c *pageChecker) damaged(page uint64, format string, args ...any) *store.CorruptError {
	return &store.CorruptError{File: c.path, Page: page, HasPage: true, Reason: fmt.Sprintf(format, args...)}
}

// mapPages: the check maps the used pages read-only, once, instead of
// reading them a page at a time (a 1 MiB store took 1.7 ms of every
// start that way, most of it in 500 reads and their buffers). Tests
// turn it off to check the page-at-a-time path, which also serves a
// file that cannot be mapped.
var mapPages = true

// mapUsed maps the pages below the high-water mark (metas checked that
// they are in the file) and returns the unmap, or nil when they are read
// a page at a time instead. The file is locked: nothing can shrink it
// under the mapping, unless something ignores the lock; a fault on the
// mapping then ends the check with an error (checkPages), not the
// process.
func (c *pageChecker) mapUsed() (unmap func()) {
	f, ok := c.f.(*os.File)
	n := c.hwm * c.pageSize
	if !ok || !mapPages || n == 0 || n > uint64(c.size) || n > math.MaxInt {
		return nil
	}
	buf, err := unix.Mmap(int(f.Fd()), 0, int(n), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil
	}
	c.used = buf
	return func() {
		c.used = nil
		unix.Munmap(buf)
	}
}

// faulted turns a fault on the mapping (the file shrank while it was
// checked) into an error; any other panic goes on.
func (c *pageChecker) faulted(r any, err *error) {
	if _, fault := r.(interface{ Addr() uintptr }); !fault {
		panic(r)
	}
	*err = fmt.Errorf("check store %s: the file changed while it was checked (is something ignoring its lock?)", c.path)
}

// read returns n bytes at off, or says the file ends first. The bytes
// may be the mapping's: callers neither modify nor keep them.
func (c *pageChecker) read(page, off, n uint64) ([]byte, error) {
	if off > uint64(c.size) || n > uint64(c.size)-off {
		return nil, c.damaged(page, "extends past the end of the file (%d bytes)", c.size)
	}
	if off <= uint64(len(c.used)) && n <= uint64(len(c.used))-off {
		return c.used[off : off+n : off+n], nil
	}
	buf := make([]byte, n)
	if _, err := c.f.ReadAt(buf, int64(off)); err != nil {
		return nil, fmt.Errorf("read store %s at %d: %w", c.path, off, err)
	}
	return buf, nil
}

// metas checks both meta pages and returns the one bbolt uses (the higher
// txid). bbolt would fall back to the other when one fails its checksum,
// but that other is the transaction before: using it could silently drop
// the last committed change (an acceptance among them). A commit writes
// its meta page after the data is synced, in one sector, so a meta page
// that fails its checksum is damage, not an interrupted commit.
func (c *pageChecker) metas() (*boltMeta, error) {
	m0, err := c.meta(0, 0)
	if err != nil {
		return nil, err
	}
	m1, err := c.meta(1, uint64(m0.pageSize))
	if err != nil {
		return nil, err
	}
	if m1.pageSize != m0.pageSize {
		return nil, c.damaged(1, "page size %d differs from page 0's %d", m1.pageSize, m0.pageSize)
	}
	m := m0
	if m1.txid > m0.txid {
		m = m1
	}
	ps := uint64(m.pageSize)
	switch {
	case m.pgid < 3:
		return nil, c.damaged(m.txid%2, "high-water mark %d leaves no room for a root page", m.pgid)
	case m.pgid > uint64(c.size)/ps:
		return nil, c.damaged(m.txid%2, "high-water mark %d is past the end of the file (%d pages)", m.pgid, uint64(c.size)/ps)
	case m.root < 2 || m.root >= m.pgid:
		return nil, c.damaged(m.txid%2, "root page %d outside [2, %d)", m.root, m.pgid)
	case m.freelist != noFreelist && (m.freelist < 2 || m.freelist >= m.pgid):
		return nil, c.damaged(m.txid%2, "freelist page %d outside [2, %d)", m.freelist, m.pgid)
	}
	return m, nil
}

func (c *pageChecker) meta(id, off uint64) (*boltMeta, error) {
	buf, err := c.read(id, off, pageHeaderSize+metaSize)
	if err != nil {
		return nil, err
	}
	if got := native.Uint64(buf[0:]); got != id {
		return nil, c.damaged(id, "meta page says it is page %d", got)
	}
	if flags := native.Uint16(buf[8:]); flags != metaPageFlag {
		return nil, c.damaged(id, "meta page has flags %#x", flags)
	}
	b := buf[pageHeaderSize:]
	h := fnv.New64a()
	h.Write(b[:metaSumOffset])
	switch {
	case native.Uint32(b[0:]) != boltMagic:
		return nil, c.damaged(id, "not a bbolt meta page (magic %#x)", native.Uint32(b[0:]))
	case native.Uint32(b[4:]) != boltVersion:
		return nil, c.damaged(id, "bbolt format version %d, not %d", native.Uint32(b[4:]), boltVersion)
	case native.Uint64(b[metaSumOffset:]) != h.Sum64():
		return nil, c.damaged(id, "meta page fails its checksum")
	}
	m := &boltMeta{pageSize: native.Uint32(b[8:]), root: native.Uint64(b[16:]),
		freelist: native.Uint64(b[32:]), pgid: native.Uint64(b[40:]), txid: native.Uint64(b[48:])}
	if ps := m.pageSize; ps < minPageSize || ps > maxPageSize || ps&(ps-1) != 0 {
		return nil, c.damaged(id, "page size %d", ps)
	}
	if id == 1 && off != uint64(m.pageSize) {
		return nil, c.damaged(id, "meta page found at %d, its page size is %d", off, m.pageSize)
	}
	return m, nil
}

// reach marks the pages of one page (itself and its overflow) as reached,
// once.
func (c *pageChecker) reach(id uint64, overflow uint32) error {
	if id < 2 || id >= c.hwm || uint64(overflow) >= c.hwm-id {
		return c.damaged(id, "page %d (+%d overflow) outside [2, %d)", id, overflow, c.hwm)
	}
	for p := id; p <= id+uint64(overflow); p++ {
		if c.reached[p] {
			return c.damaged(p, "reached twice")
		}
		c.reached[p] = true
	}
	return nil
}

// page reads page id whole (with its overflow) after checking its header.
func (c *pageChecker) page(id uint64, wantFlags ...uint16) ([]byte, error) {
	if id < 2 || id >= c.hwm {
		return nil, c.damaged(id, "page %d outside [2, %d)", id, c.hwm)
	}
	hdr, err := c.read(id, id*c.pageSize, pageHeaderSize)
	if err != nil {
		return nil, err
	}
	if got := native.Uint64(hdr[0:]); got != id {
		return nil, c.damaged(id, "page says it is page %d", got)
	}
	flags, overflow := native.Uint16(hdr[8:]), native.Uint32(hdr[12:])
	ok := false
	for _, w := range wantFlags {
		ok = ok || flags == w
	}
	if !ok {
		return nil, c.damaged(id, "unexpected page type (flags %#x)", flags)
	}
	if err := c.reach(id, overflow); err != nil {
		return nil, err
	}
	return c.read(id, id*c.pageSize, (uint64(overflow)+1)*c.pageSize)
}

// checkFreelist checks a persisted freelist page and returns its ids.
func (c *pageChecker) checkFreelist(id uint64) ([]uint64, error) {
	buf, err := c.page(id, freelistPageFlag)
	if err != nil {
		return nil, err
	}
	n, start := uint64(native.Uint16(buf[10:])), uint64(pageHeaderSize)
	if n == 0xFFFF {
		if len(buf) < pageHeaderSize+8 {
			return nil, c.damaged(id, "freelist too short")
		}
		n, start = native.Uint64(buf[pageHeaderSize:]), pageHeaderSize+8
	}
	if n > (uint64(len(buf))-start)/8 {
		return nil, c.damaged(id, "freelist of %d ids does not fit its pages", n)
	}
	free := make([]uint64, n)
	for i := range free {
		if free[i] = native.Uint64(buf[start+8*uint64(i):]); free[i] < 2 || free[i] >= c.hwm {
			return nil, c.damaged(id, "free page id %d outside [2, %d)", free[i], c.hwm)
		}
	}
	return free, nil
}
