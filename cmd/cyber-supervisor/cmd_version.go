package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what the build info says about this binary.
type buildVersion struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"vcs_revision,omitempty"`
	Time     string `json:"vcs_time,omitempty"`
	// Modified is given only when the build stamped a revision: without
	// one, false would claim a clean tree nobody checked.
	Modified *bool  `json:"vcs_modified,omitempty"`
	Go       string `json:"go"`
}

func readBuildVersion() buildVersion {
	v := buildVersion{Module: "github.com/cyberia-to/cyber-supervisor", Version: "(unknown)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Module, v.Version, v.Go = bi.Main.Path, bi.Main.Version, bi.GoVersion
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			modified := s.Value == "true"
			v.Modified = &modified
		}
	}
	if v.Revision == "" {
		v.Modified = nil
	}
	return v
}

// versionString is the one-line form: module version, revision, build.
func versionString() string {
	v := readBuildVersion()
	s := v.Version
	if v.Revision != "" {
		s += " (" + v.Revision
		if v.Modified != nil && *v.Modified {
			s += ", modified"
		}
		if v.Time != "" {
			s += ", " + v.Time
		}
		s += ")"
	}
	return s + " " + v.Go
}

func newVersionCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the module version and VCS revision of this build",
		GroupID: groupHost,
		Args:    noArgs("version"),
		RunE:    func(*cobra.Command, []string) error { return a.reportVersion() },
	}
}

// reportVersion is the outcome of version and of --version.
func (a *app) reportVersion() error {
	return a.report("version", readBuildVersion(), nil, func() { fmt.Fprintln(a.stdout, "cyber-supervisor "+versionString()) })
}
