// Package apitypes is the JSON the supervisor shows its clients: every
// reply of the job side of the local HTTP API (docs/supervisor.md, "The
// API") and every result the CLI prints with --format json for jobs,
// attempts, events, hosts, capabilities and the store's reports; and
// the records the fencing side's replies carry (fencing.go: the neuron's
// root and grant, progs, invocations, operations and their attempts,
// docs/fencing.md), which supervisor/fenceservice converts.
//
// These types are the API's own, apart from the store's records: a
// handler or a command converts a record into one of them explicitly
// (supervisor/api's ...Of functions), so a field renamed or added in
// storage changes the API only where someone writes it down. Each type
// has a golden JSON file in testdata, compared on every test run.
//
// The rules every type keeps (docs/supervisor.md, "JSON names"):
//   - a job's id is job_id, wherever it appears;
//   - a certificate's path is certificate_path (its host
//     certificate_host, MACHINE:PATH certificate_location);
//   - a job's or an attempt's lifecycle state is state, never status;
//   - every integer is a decimal string (the contract's rule for u64);
//   - times are RFC 3339, and an unset optional time is left out.
//
// The package depends on the contract types (protocol), the
// lifecycle's state names and the neuron's ids and keys (neuron) only,
// so that a client reads it without the supervisor; the store never
// imports it. The fencing records keep the JSON they had as the store's
// records: an invocation's lifecycle is status (the contract's name),
// an operation's stage a number beside its stage_name.
package apitypes
