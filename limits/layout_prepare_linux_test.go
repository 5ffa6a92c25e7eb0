package limits

import (
	"reflect"
	"testing"
)

// TestPrepareLayoutTaken: what PrepareLayout read is what the next Manager
// takes, the same layout a read now finds, and it is taken once.
func TestPrepareLayoutTaken(t *testing.T) {
	PrepareLayout()
	PrepareLayout() // a second call starts nothing more
	if !preparedLayout.Pending() {
		t.Fatal("PrepareLayout started nothing")
	}
	got, gotErr := takeLayout()
	want, wantErr := discoverLayout()
	if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
		t.Fatalf("prepared layout %+v (%v), read now %+v (%v)", got, gotErr, want, wantErr)
	}
	if preparedLayout.Pending() {
		t.Fatal("the prepared layout was not taken")
	}
}
