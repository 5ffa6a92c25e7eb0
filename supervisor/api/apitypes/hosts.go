package apitypes

import (
	"encoding/json"
	"time"
)

// Host is one live host boot of the cluster (on the home's own store,
// the daemon itself).
type Host struct {
	Host string `json:"host"`
	Boot string `json:"boot"`
	// Generation is the boot's placement generation, larger for every
	// later boot anywhere in the cluster.
	Generation uint64    `json:"generation,string"`
	Slots      int       `json:"slots,string"`
	Started    time.Time `json:"started,omitzero"`
	// Home is MACHINE:PATH of the boot's home.
	Home string `json:"home,omitempty"`
	// LeaseTTLMS and LeaseLeftMS are the boot's registration lease on
	// etcd when the hosts were listed: its TTL and what was left of it
	// (TTL − left: how long ago the boot last renewed it). Absent on a
	// home's own store, which has no lease.
	LeaseTTLMS  uint64 `json:"lease_ttl_ms,string,omitempty"`
	LeaseLeftMS uint64 `json:"lease_left_ms,string,omitempty"`
	// Running are the boot's unfinished attempts, JOB/N.
	Running []string `json:"running"`
	// Self: the daemon answering is this boot.
	Self bool `json:"self"`
}

// HostsReply answers GET /v1/hosts; the CLI's hosts prints its Hosts.
type HostsReply struct {
	Hosts []Host `json:"hosts"`
	// Store is what the hosts share: "bbolt", a home's own store (its
	// daemon is the one host), or "etcd", a cluster's.
	Store string `json:"store"`
}

// CapabilitiesReply answers GET /v1/capabilities, and is what the CLI's
// capabilities prints: the contract capabilities jobs are admitted
// against, the operator's job limits, and what the host probe saw.
type CapabilitiesReply struct {
	// Capabilities is contract JSON (protocol.ParseCapabilities reads it).
	Capabilities json.RawMessage `json:"capabilities"`
	Limits       Limits          `json:"limits"`
	Host         *HostReport     `json:"host,omitempty"`
}

// Limits are the operator's default and maximal job limits.
type Limits struct {
	DefaultMemoryBytes uint64 `json:"default_memory_bytes,string"`
	DefaultWallTimeMS  uint64 `json:"default_wall_time_ms,string"`
	MaxMemoryBytes     uint64 `json:"max_memory_bytes,string"`
	MaxWallTimeMS      uint64 `json:"max_wall_time_ms,string"`
	MinMemoryBytes     uint64 `json:"min_memory_bytes,string"`
	MemoryEnforced     bool   `json:"memory_enforced"`
	// DefaultRetries are the retries of a job that asks for none.
	DefaultRetries uint32 `json:"default_retries,string"`
}

// HostReport is the worker launcher's isolation and the host probe's
// findings (the limits package's probe report, docs/supervisor.md).
type HostReport struct {
	Isolation string          `json:"isolation"`
	Probe     json.RawMessage `json:"probe"`
}
