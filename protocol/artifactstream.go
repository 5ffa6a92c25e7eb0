package protocol

// ArtifactStreamName is the entry of a worker's work directory through
// which the supervisor takes a prove's certificate as it is written: a
// FIFO the supervisor makes there before it gives a jailed worker its
// job (docs/artifacts.md, "Streams"). A worker that finds it writes the
// compressed certificate into it instead of publishing a file, then
// reports the artifact as usual (name StreamedArtifactName, size and
// SHA-256 of the bytes it wrote); the supervisor counts the bytes against
// the job's artifact limit, writes them to the attempt's sandbox on its
// disk, and publishes them there under StreamedArtifactName only when the
// result comes. A worker without the entry publishes a file as before.
const ArtifactStreamName = "artifact.stream"

// StreamedArtifactName is the name of a certificate that came through the
// stream: the name the worker reports and the supervisor keeps.
const StreamedArtifactName = "certificate.cnxt.zst"

// CertificateFeedName is the entry of a worker's work directory through
// which the supervisor gives it the certificate of a verify job that names
// it by reference (JobSpec.ArtifactRef): a FIFO the supervisor makes there
// before it gives the worker its job and writes the stored certificate
// into as the worker reads it (docs/artifacts.md, "Streams"). The worker
// hashes what it reads: bytes other than the ref's are proof_rejected.
const CertificateFeedName = "certificate.feed"
