package api

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/cyberia-to/cyber-supervisor/supervisor/api/apitypes"
)

// CheckStore asks the daemon to check its store.
func (c *Client) CheckStore(ctx context.Context) (*apitypes.CheckReport, error) {
	var rep apitypes.CheckReport
	if err := c.do(ctx, http.MethodGet, "/v1/store/check", nil, &rep); err != nil {
		return nil, err
	}
	return &rep, nil
}

// BackupStoreNoting copies the daemon's store into w and returns the
// daemon's note on what the copy does not hold (the jobs of a daemon on etcd; "" when
// it holds them all).
func (c *Client) BackupStoreNoting(ctx context.Context, w io.Writer) (int64, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://supervisor/v1/store/backup", nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, "", c.replyError(resp)
	}
	note := resp.Header.Get(StoreNoteHeader)
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, note, fmt.Errorf("store backup cut short after %d bytes: %w", n, err)
	}
	return n, note, nil
}
