package hostact

import "context"

// Host returns its argument unchanged (the tag used by the acceptance
// scenarios).
func Host(_ context.Context, c Call) Result { return Value(c.Argument) }

// Builtins registers emit (writing to the emitter) and host.
func Builtins(r *Registry, e *Emitter) error {
	if err := r.Register("emit", TagEmit, e.Emit); err != nil {
		return err
	}
	return r.Register("host", TagHost, Host)
}
