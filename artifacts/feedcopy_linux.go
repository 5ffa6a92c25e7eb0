package artifacts

import (
	"io"
	"os"
	"sync"
)

// FeedCopy is a feed being written from a file: the supervisor giving a
// worker the stored certificate of a verify job by reference, and
// nox-worker verify giving its own worker a certificate too long to pass
// inline. The copy holds a 32 KiB buffer of the file, and stops when told
// (Stop): a reader that never opens the feed, or leaves in the middle,
// holds nothing of the writer's.
type FeedCopy struct {
	feed *Feed
	src  io.ReadCloser
	stop chan struct{}
	done chan struct{}
	once sync.Once

	mu      sync.Mutex
	out     *os.File
	stopped bool
}

// StartFeed makes the feed name in d (MakeFeed) and writes src into it
// once a reader opened it, then closes its end, which is the reader's
// end of file. src is closed when the copy ends. A failed write (the
// reader left: EPIPE; Stop closed the pipe) only ends the copy: the
// reader is the one to tell a short feed from a whole one (by its length
// and digest). On an error src is the caller's to close.
func (d *Dir) StartFeed(name string, src io.ReadCloser) (*FeedCopy, error) {
	feed, err := d.MakeFeed(name)
	if err != nil {
		return nil, err
	}
	c := &FeedCopy{feed: feed, src: src, stop: make(chan struct{}), done: make(chan struct{})}
	go c.run()
	return c, nil
}

func (c *FeedCopy) run() {
	defer close(c.done)
	defer c.src.Close()
	out, err := c.feed.Open(c.stop)
	if err != nil {
		return
	}
	c.mu.Lock()
	if c.stopped {
		c.mu.Unlock()
		out.Close()
		return
	}
	c.out = out
	c.mu.Unlock()
	io.Copy(out, c.src)
	out.Close()
}

// Stop ends the copy (a write waiting on a full pipe returns), waits for
// it, and releases the feed. Safe to call more than once.
func (c *FeedCopy) Stop() {
	c.once.Do(func() {
		c.mu.Lock()
		c.stopped = true
		if c.out != nil {
			c.out.Close()
		}
		c.mu.Unlock()
		close(c.stop)
		<-c.done
		c.feed.Close()
	})
}
