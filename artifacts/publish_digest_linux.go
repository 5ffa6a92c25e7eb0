package artifacts

// Digest is what was written so far: its length and its SHA-256, before
// Commit publishes it. A content-addressed store checks the digest it
// names the artifact by here, so that bytes other than the name's are
// never published under it.
func (w *Writer) Digest() (n int64, sum [32]byte) {
	w.h.Sum(sum[:0])
	return w.n, sum
}
