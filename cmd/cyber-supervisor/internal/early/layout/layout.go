// Package layout starts reading the cgroup layout (limits.PrepareLayout)
// before main when the arguments look like an isolated run (package
// early's guess). It is apart from package early because package limits
// is initialised later than early can be, behind other packages that
// sort before it; the layout is only needed after main. main imports it
// for this effect only.
package layout

import (
	"github.com/cyberia-to/cyber-supervisor/cmd/cyber-supervisor/internal/early"
	"github.com/cyberia-to/cyber-supervisor/limits"
)

func init() {
	if early.IsolatedRun {
		limits.PrepareLayout()
	}
}
