package pluginclient

import (
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// TestWarmCodecsCoversTheConnection: every service of a worker's
// connection is registered under the name WarmCodecs looks for (a
// go-plugin that renamed one would otherwise make the warm-up silently do
// less), and the messages inside messages are warmed too.
func TestWarmCodecsCoversTheConnection(t *testing.T) {
	seen, err := warmCodecs()
	if err != nil {
		t.Fatal(err)
	}
	want := []protoreflect.MessageDescriptor{
		(&workerpb.RunInput{}).ProtoReflect().Descriptor(),
		(&workerpb.RunEvent{}).ProtoReflect().Descriptor(),
		(&workerpb.Start{}).ProtoReflect().Descriptor(),  // inside RunInput
		(&workerpb.Result{}).ProtoReflect().Descriptor(), // inside RunEvent
		(&workerpb.DescribeResponse{}).ProtoReflect().Descriptor(),
	}
	for _, md := range want {
		if !seen[md.FullName()] {
			t.Errorf("%s not warmed", md.FullName())
		}
	}
	if !seen["plugin.Empty"] {
		t.Error("go-plugin's plugin.Empty (its controller's Shutdown) not warmed")
	}
	// The streams the connection refuses carry nothing to warm.
	for _, name := range []protoreflect.FullName{"plugin.ConnInfo", "plugin.StdioData"} {
		if seen[name] {
			t.Errorf("go-plugin's %s warmed, but its stream is never opened", name)
		}
	}
	if err := WarmCodecs(); err != nil {
		t.Fatalf("second call: %v", err)
	}
}
