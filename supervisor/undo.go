package supervisor

// undoStack holds the closes of what a constructor has opened so far, run
// the last first when a later step fails.
type undoStack []func()

func (u *undoStack) push(f func()) { *u = append(*u, f) }

func (u undoStack) run() {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]()
	}
}
