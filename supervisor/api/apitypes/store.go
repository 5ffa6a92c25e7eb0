package apitypes

import "time"

// CheckReport answers GET /v1/store/check, and is what the CLI's store
// check and store backup print (a backup is checked as a store before
// it takes its name). Problems is empty for a sound store.
type CheckReport struct {
	File     string `json:"file"`
	Schema   int    `json:"schema_version,string"`
	PageSize int    `json:"page_size,string"`
	Pages    uint64 `json:"pages,string"`
	Records  int    `json:"records,string"`
	Jobs     int    `json:"jobs,string"`
	Attempts int    `json:"attempts,string"`
	Events   int    `json:"events,string"`
	Queued   int    `json:"queued,string"`
	// Tombstones counts removed jobs (their ids stay taken).
	Tombstones int `json:"tombstones,string"`
	// FencingRecords counts the records of dispatch and fencing;
	// Signatures says whether their signatures were verified.
	FencingRecords int    `json:"fencing_records,string"`
	Signatures     string `json:"signatures"`
	// UnauthenticatedRecords counts fencing records without an
	// authentication tag (a store from before schema 7).
	UnauthenticatedRecords int           `json:"unauthenticated_records,string,omitempty"`
	Backup                 *BackupMark   `json:"backup,omitempty"`
	Fence                  *RestoreFence `json:"fence,omitempty"`
	Problems               []string      `json:"problems"`
	// Note says what the check did not cover.
	Note string `json:"note,omitempty"`
}

// BackupMark says a store file is a backup copy: when it was taken, and
// of which boot.
type BackupMark struct {
	Taken time.Time `json:"taken"`
	Boot  string    `json:"boot"`
	Boots uint64    `json:"boots,string"`
}

// RestoreFence is the last fence of a restored store.
type RestoreFence struct {
	At          time.Time `json:"at"`
	Restores    uint64    `json:"restores,string"`
	Invocations uint64    `json:"invocations,string"` // the highest invocation seq fenced
	Reason      string    `json:"reason"`
	Emitted     uint64    `json:"emitted,string,omitempty"`
}

// RestoreReport is what the CLI's store restore prints.
type RestoreReport struct {
	From  string `json:"from"`
	Store string `json:"store"`
	// KeptAside is the name the previous store file is kept under ("":
	// there was none).
	KeptAside string      `json:"kept_aside"`
	Backup    *BackupMark `json:"backup,omitempty"`
	Jobs      int         `json:"jobs,string"`
	Records   int         `json:"records,string"`
}
