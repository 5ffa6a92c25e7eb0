package supervisor

// Home is the daemon's home directory (store, sandboxes, socket): the
// dashboard names it in the CLI commands it shows.
func (s *Supervisor) Home() string { return s.cfg.Home }
