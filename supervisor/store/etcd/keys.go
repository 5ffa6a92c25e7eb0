package etcd

import (
	"encoding/binary"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// keys is the layout under the store's prefix (docs/cluster.md):
//
//	meta                         Meta {schema_version, created}
//	seq                          u64 BE: the highest job seq handed out
//	jobs/<id>                    Job
//	specs/<id>                   the frozen spec, write-once
//	attempts/<id>\x00<u32 BE n>  Attempt
//	unfinished/<id>\x00<u32 n>   the attempt's host and boot while it runs
//	events/<id>\x00<u64 BE seq>  Event
//	evseq/<id>                   the job's last event seq (u64 BE)
//	queue/<priority><seq>        job id (queueKey: highest priority first)
//	queueidx/<id>                its queue key
//	accepted/<id>                u32 BE accepted attempt: write-once, never deleted
//	jobclaims/<id>\x00<u32 n>    the attempt's claim (store.JobClaim), write-once
//	submitted/<u64 BE seq>       job id, in submission order
//	live/<id>                    present while the job has not ended
//	tombstones/<id>              Tombstone of a removed job, never deleted
//	hosts/<host>                 HostBoot of the host's live boot, under its lease
//	txn/<boot>/<n>               outcome markers of writes (store.go)
type keys struct{ prefix string }

func newKeys(prefix string) keys {
	if !strings.HasSuffix(prefix, "/") {
		prefix += "/"
	}
	return keys{prefix: prefix}
}

func (k keys) meta() string              { return k.prefix + "meta" }
func (k keys) seq() string               { return k.prefix + "seq" }
func (k keys) jobs() string              { return k.prefix + "jobs/" }
func (k keys) job(id string) string      { return k.jobs() + id }
func (k keys) spec(id string) string     { return k.prefix + "specs/" + id }
func (k keys) evseq(id string) string    { return k.prefix + "evseq/" + id }
func (k keys) queue() string             { return k.prefix + "queue/" }
func (k keys) queueIdx(id string) string { return k.prefix + "queueidx/" + id }
func (k keys) accepted(id string) string { return k.prefix + "accepted/" + id }
func (k keys) submitted() string         { return k.prefix + "submitted/" }
func (k keys) live() string              { return k.prefix + "live/" }
func (k keys) liveJob(id string) string  { return k.live() + id }
func (k keys) tombstone(id string) string {
	return k.prefix + "tombstones/" + id
}
func (k keys) hosts() string            { return k.prefix + "hosts/" }
func (k keys) host(id string) string    { return k.hosts() + id }
func (k keys) unfinished() string       { return k.prefix + "unfinished/" }
func (k keys) markers(ns string) string { return k.prefix + "txn/" + ns + "/" }

// The per-job prefixes end in a zero byte, which no job id holds: the
// attempts of "a" never include those of "ab".
func (k keys) attempts(job string) string { return k.prefix + "attempts/" + job + "\x00" }
func (k keys) attempt(job string, n uint32) string {
	return k.attempts(job) + string(binary.BigEndian.AppendUint32(nil, n))
}
func (k keys) unfinishedOf(job string) string { return k.unfinished() + job + "\x00" }
func (k keys) jobClaims(job string) string    { return k.prefix + "jobclaims/" + job + "\x00" }
func (k keys) jobClaim(job string, n uint32) string {
	return k.jobClaims(job) + string(binary.BigEndian.AppendUint32(nil, n))
}
func (k keys) unfinishedAttempt(job string, n uint32) string {
	return k.unfinishedOf(job) + string(binary.BigEndian.AppendUint32(nil, n))
}
func (k keys) events(job string) string { return k.prefix + "events/" + job + "\x00" }
func (k keys) event(job string, seq uint64) string {
	return k.events(job) + string(binary.BigEndian.AppendUint64(nil, seq))
}
func (k keys) submittedSeq(seq uint64) string {
	return k.submitted() + string(binary.BigEndian.AppendUint64(nil, seq))
}

// queueEntry sorts higher priorities first, then lower sequence numbers
// (as the local store's queue does).
func (k keys) queueEntry(priority int32, seq uint64) string {
	b := binary.BigEndian.AppendUint32(nil, ^(uint32(priority) ^ 1<<31))
	return k.queue() + string(binary.BigEndian.AppendUint64(b, seq))
}

// prefixEnd is the end of the range of keys that start with p.
func prefixEnd(p string) string { return clientv3.GetPrefixRangeEnd(p) }
