// Package depspin is a temporary holder of module requirements while the
// packages that use them are being written. Remove it once every dependency
// is imported by real code.
package depspin

import (
	_ "github.com/containerd/cgroups/v3"
	_ "github.com/elastic/go-seccomp-bpf"
	_ "github.com/hashicorp/go-hclog"
	_ "github.com/hashicorp/go-plugin"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/landlock-lsm/go-landlock/landlock"
	_ "github.com/oklog/run"
	_ "go.etcd.io/bbolt"
	_ "golang.org/x/sys/unix"
	_ "google.golang.org/grpc"
	_ "google.golang.org/protobuf/proto"
	_ "pgregory.net/rapid"
)
