// Package protocol holds the cyber/worker/v1 contract as Go types: job
// specs, limits, profiles, capabilities, worker descriptors, results and the
// typed error set; their canonical JSON; admission; and the go-plugin
// handshake constants. The gRPC service that carries them between the
// supervisor and a worker process lives in two subpackages: pluginclient
// (go-plugin's client, grpc-go, generated workerpb code) and pluginserver
// (the worker's side, on the standard library alone).
//
// The JSON types are the single source of truth. Protobuf is only the
// envelope: every contract object crosses the gRPC boundary as the same
// JSON bytes that a file, a CLI or a log would hold.
//
// Two reading disciplines apply. Requests (job specs, worker descriptors,
// input files, the identity keys of a bundle) are parsed strictly: unknown
// keys, duplicate keys at any depth, wrongly typed values and non-canonical
// numbers are refused with invalid_job and the JSON path of the offence.
// Responses (results, capabilities, errors) ignore unknown keys so that
// workers can add fields, but still refuse duplicates and bad values. Every
// parser bounds its input size before it parses anything.
//
// All u64 quantities are decimal strings ("0", "42"; no sign, no leading
// zeros, no spaces). Field values must also be below the Goldilocks prime;
// nothing is ever reduced modulo p silently.
//
// The formats are documented with examples in docs/protocol.md.
package protocol
