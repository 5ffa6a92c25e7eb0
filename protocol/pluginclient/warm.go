package pluginclient

import (
	"fmt"

	"golang.org/x/net/http2/hpack"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/cyberia-to/cyber-supervisor/protocol/workerpb"
)

// connectionServices are the gRPC services a worker's connection uses:
// go-plugin's controller, whose Shutdown its client sends when it closes,
// and the worker's own. (go-plugin's broker and stdio streams are never
// opened: see bounds.go.)
var connectionServices = []protoreflect.FullName{
	"plugin.GRPCController",
	protoreflect.FullName(workerpb.Worker_ServiceDesc.ServiceName),
}

// WarmCodecs builds now what a worker's connection otherwise builds on
// its first use of each message: the protobuf codec of every message its
// services carry (and of the messages inside them), and hpack's Huffman
// table. A one-shot run calls it while its worker starts, when the
// supervisor has nothing else to do; otherwise that work sits between the
// worker's handshake and its job (~0.4 ms of CPU here).
func WarmCodecs() error {
	_, err := warmCodecs()
	return err
}

// warmCodecs returns the messages it warmed, for the tests.
func warmCodecs() (map[protoreflect.FullName]bool, error) {
	seen := map[protoreflect.FullName]bool{}
	var missing []protoreflect.FullName
	for _, name := range connectionServices {
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(name)
		sd, ok := d.(protoreflect.ServiceDescriptor)
		if err != nil || !ok {
			missing = append(missing, name)
			continue
		}
		methods := sd.Methods()
		for i := 0; i < methods.Len(); i++ {
			warmMessage(methods.Get(i).Input(), seen)
			warmMessage(methods.Get(i).Output(), seen)
		}
	}
	// Any string decodes: the table is built on the first call.
	_, _ = hpack.HuffmanDecodeToString([]byte{0xff})
	if len(missing) > 0 {
		return seen, fmt.Errorf("pluginclient: services not registered: %v", missing)
	}
	return seen, nil
}

// warmMessage runs md's codec once each way on an empty message, then
// does the same for every message type among its fields.
func warmMessage(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) {
	if seen[md.FullName()] {
		return
	}
	seen[md.FullName()] = true
	if mt, err := protoregistry.GlobalTypes.FindMessageByName(md.FullName()); err == nil {
		m := mt.New().Interface()
		b, _ := proto.Marshal(m)
		_ = proto.Unmarshal(b, m)
	}
	fields := md.Fields()
	for i := 0; i < fields.Len(); i++ {
		if sub := fields.Get(i).Message(); sub != nil {
			warmMessage(sub, seen)
		}
	}
}
