package protocol

// Size bounds of the contract. Each is checked before the bytes it bounds
// are decoded or parsed, so that a hostile request costs at most its own
// length.
const (
	// MaxJobSpecBytes bounds a job spec's JSON. It leaves room for the
	// base64 of a DefaultArtifactBytes artifact (about 42.7 MiB) plus a
	// bundle.
	MaxJobSpecBytes = 48 << 20
	// MaxBundleBytes bounds a frozen ProgramBundle. The assembly is at most
	// 256 KiB; the rest is metadata, which never needs megabytes.
	MaxBundleBytes = 4 << 20
	// MaxAssemblyBytes, MaxFormulaNodes and MaxFormulaDepth are the
	// formula bounds of the public profile (shared with Joy's parser).
	MaxAssemblyBytes = 256 << 10
	MaxFormulaNodes  = 4096
	MaxFormulaDepth  = 128
	// MaxInputs and MaxExpectedOutputs bound the public statement.
	MaxInputs          = 64
	MaxExpectedOutputs = 4096
	// MaxResultOutputs bounds the output of an execution result. Execute
	// jobs are not bound by the certificate's 4096, but their result must
	// still fit in one gRPC message (65,536 words are under 1.5 MiB of
	// JSON).
	MaxResultOutputs = 1 << 16
	// MaxResultBytes bounds a result's JSON.
	MaxResultBytes = 4 << 20
	// DefaultArtifactBytes is the artifact cap when a job requests none;
	// MaxArtifactBytes is the largest cap a job may request: 64 GiB. A v2
	// certificate is streamed to its file as the run goes and verified
	// streamed, so its length is bounded by what its file may hold, not
	// by memory (docs/limits.md, "Certificates"). Before v2 it was 256
	// MiB, which a held certificate could never reach anyway.
	DefaultArtifactBytes = 32 << 20
	MaxArtifactBytes     = 64 << 30
	// MaxInputFileBytes and MaxInputWords bound Joy's input file.
	MaxInputFileBytes = 4 << 20
	MaxInputWords     = 1 << 16
	// MaxDescriptorBytes and MaxCapabilitiesBytes bound the small
	// configuration objects.
	MaxDescriptorBytes   = 64 << 10
	MaxCapabilitiesBytes = 64 << 10
	// MaxErrorBytes bounds an error's JSON, MaxMessageBytes its message.
	MaxErrorBytes   = 8 << 10
	MaxMessageBytes = 1024
)

// Limits are the resources a job asks to be bounded by. Reductions is the
// deterministic budget and is always required; the others are protections
// of the host, where 0 means "not requested". Wall-clock limits never enter
// deterministic state.
type Limits struct {
	Reductions    uint64 // reduction budget, > 0 and < p
	WallTimeMS    uint64 // wall-clock limit in milliseconds
	MemoryBytes   uint64 // hard memory limit of the worker
	ArtifactBytes uint64 // cap of a produced or supplied artifact
}

// ArtifactCap is the artifact size bound in force for these limits.
func (l Limits) ArtifactCap() uint64 {
	if l.ArtifactBytes == 0 {
		return DefaultArtifactBytes
	}
	return l.ArtifactBytes
}
