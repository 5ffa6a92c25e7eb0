package bolt

import (
	"bytes"

	"github.com/cyberia-to/cyber-supervisor/supervisor/store"
)

// walk checks the tree of the root bucket and of every bucket in it.
func (c *pageChecker) walk(root uint64) error {
	stack := []walkItem{{page: root}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if it.depth > maxTreeDepth {
			return c.damaged(it.page, "tree deeper than %d levels", maxTreeDepth)
		}
		buf, id := it.inline, it.page
		if buf == nil {
			var err error
			if buf, err = c.page(id, branchPageFlag, leafPageFlag); err != nil {
				return err
			}
		}
		more, err := c.elements(it, buf)
		if err != nil {
			return err
		}
		stack = append(stack, more...)
	}
	return nil
}

// elements checks one page's elements and returns the pages they lead to.
func (c *pageChecker) elements(it walkItem, buf []byte) ([]walkItem, error) {
	id := it.page
	if len(buf) < pageHeaderSize {
		return nil, c.damaged(id, "inline page of bucket %q is too short", it.bucket)
	}
	flags, count := native.Uint16(buf[8:]), uint64(native.Uint16(buf[10:]))
	if it.inline != nil && flags != leafPageFlag {
		return nil, c.damaged(id, "inline page of bucket %q has flags %#x", it.bucket, flags)
	}
	if count > (uint64(len(buf))-pageHeaderSize)/elementSize {
		return nil, c.damaged(id, "%d elements do not fit the page", count)
	}
	branch := flags == branchPageFlag
	switch {
	case branch && count == 0:
		return nil, c.damaged(id, "branch page without elements")
	case it.child && count == 0:
		// bbolt removes a node that lost its last key when it commits;
		// only a bucket's root may be empty. An empty page below a
		// branch is a damaged count that would hide its records.
		return nil, c.damaged(id, "a page below a branch holds no elements")
	}
	var out []walkItem
	var prev []byte
	// The keys bound the children of a branch page; a leaf needs none.
	var keys [][]byte
	if branch {
		keys = make([][]byte, count)
	}
	packed := pageHeaderSize + count*elementSize
	for i := uint64(0); i < count; i++ {
		off := pageHeaderSize + i*elementSize
		e := buf[off : off+elementSize]
		var pos, ksize, vsize uint64
		if branch {
			pos, ksize = uint64(native.Uint32(e[0:])), uint64(native.Uint32(e[4:]))
		} else {
			pos, ksize, vsize = uint64(native.Uint32(e[4:])), uint64(native.Uint32(e[8:])), uint64(native.Uint32(e[12:]))
		}
		start := off + pos
		// bbolt packs the keys and values right after the elements, in
		// order (common.WriteInodeToPage): anything else means a damaged
		// header, count or element, which could otherwise hide records.
		if start != packed {
			return nil, c.damaged(id, "element %d's data is at %d, not where the page's layout puts it (%d)", i, start, packed)
		}
		if ksize == 0 || start > uint64(len(buf)) || ksize+vsize > uint64(len(buf))-start {
			return nil, c.damaged(id, "element %d points past the page", i)
		}
		packed = start + ksize + vsize
		key := buf[start : start+ksize]
		switch {
		case i > 0 && bytes.Compare(prev, key) >= 0:
			return nil, c.damaged(id, "key %d is not above the key before it", i)
		case it.lo != nil && bytes.Compare(key, it.lo) < 0:
			return nil, c.damaged(id, "key %d is below its parent's range", i)
		case it.hi != nil && bytes.Compare(key, it.hi) >= 0:
			return nil, c.damaged(id, "key %d is above its parent's range", i)
		}
		prev = key
		if branch {
			keys[i] = key
			continue
		}
		value := buf[start+ksize : start+ksize+vsize]
		lflags := native.Uint32(e[0:])
		switch {
		case lflags&^bucketLeafFlag != 0:
			return nil, c.damaged(id, "element %d has flags %#x", i, lflags)
		case lflags == bucketLeafFlag:
			child, err := c.bucket(it, key, value)
			if err != nil {
				return nil, err
			}
			out = append(out, child)
		case it.bucket == nil:
			return nil, c.damaged(id, "the root bucket holds a value (key %s)", store.PrintableKey(key))
		default:
			c.record(it, key, value)
		}
	}
	if it.inline != nil && packed != uint64(len(buf)) {
		// bbolt sizes an inline bucket's value to its page exactly.
		return nil, c.damaged(id, "inline page of bucket %q ends at %d of its %d bytes", it.bucket, packed, len(buf))
	}
	if branch {
		for i := uint64(0); i < count; i++ {
			off := pageHeaderSize + i*elementSize
			hi := it.hi
			if i+1 < count {
				hi = keys[i+1]
			}
			out = append(out, walkItem{page: native.Uint64(buf[off+8:]), lo: keys[i], hi: hi, bucket: it.bucket, depth: it.depth + 1, child: true})
		}
	}
	return out, nil
}

// bucket checks a bucket's header and returns its root (page or inline).
func (c *pageChecker) bucket(it walkItem, name, value []byte) (walkItem, error) {
	if len(value) < bucketHeaderSize {
		return walkItem{}, c.damaged(it.page, "bucket %q has a %d-byte header", name, len(value))
	}
	path := name
	if it.bucket != nil {
		path = append(append(bytes.Clone(it.bucket), '/'), name...)
	} else if !knownBucket(name) && c.badRecord == nil {
		// A bucket this build never makes: a damaged name (an empty
		// bucket's name is not sealed), or a newer schema's, which
		// checkPages tells apart by the meta record.
		c.badRecord = &store.CorruptError{File: c.path, Page: it.page, HasPage: true, Bucket: string(name),
			Reason: "a bucket this schema does not have"}
	}
	child := walkItem{bucket: path, depth: it.depth + 1, page: it.page}
	if root := native.Uint64(value[0:]); root != 0 {
		child.page = root
		return child, nil
	}
	child.inline = value[bucketHeaderSize:]
	return child, nil
}

func knownBucket(name []byte) bool {
	for _, b := range allBuckets {
		if bytes.Equal(b, name) {
			return true
		}
	}
	return false
}

// record counts a value and remembers the first whose seal fails; whether
// that matters depends on the schema (checkPages).
func (c *pageChecker) record(it walkItem, key, value []byte) {
	c.records++
	if bytes.Equal(it.bucket, bucketMeta) && bytes.Equal(key, keyMeta) {
		c.metaRaw = bytes.Clone(value)
	}
	if c.badRecord != nil {
		return
	}
	if _, ok := unseal(it.bucket, key, value); !ok {
		c.badRecord = &store.CorruptError{File: c.path, Page: it.page, HasPage: true, Bucket: string(it.bucket),
			Key: bytes.Clone(key), Reason: "the record fails its checksum"}
	}
}
