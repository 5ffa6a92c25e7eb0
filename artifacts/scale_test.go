//go:build !race

package artifacts

// streamSizes are the content sizes TestDecompressorRoundTrip streams:
// up to the decoder's window and past it.
var streamSizes = []int{0, 1, 255, 1024, 128<<10 + 1, 1 << 20, MaxWindow, MaxWindow + 1}
