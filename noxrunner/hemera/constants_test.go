package hemera

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestRoundConstants(t *testing.T) {
	boot := refBootstrap()
	if boot != roundConstants {
		for i := range boot {
			if boot[i] != roundConstants[i] {
				t.Errorf("RC[%d]: embedded %016x, bootstrap %016x", i, roundConstants[i], boot[i])
			}
		}
	}
	spot := []struct {
		i    int
		want uint64
	}{
		{0, 0x7e6ef67c13bc8100},
		{63, 0x4dc2b86d6692275a},
		{64, 0x96ad08cf20193273},
		{127, 0x29415a61860444ae},
		{128, 0x9fb420b604d1ef1a},
		{143, 0xd235adb74b698d72},
	}
	for _, c := range spot {
		t.Run(fmt.Sprintf("RC[%d]", c.i), func(t *testing.T) {
			if roundConstants[c.i] != c.want {
				t.Errorf("embedded %016x, want %016x", roundConstants[c.i], c.want)
			}
			if boot[c.i] != c.want {
				t.Errorf("bootstrap %016x, want %016x", boot[c.i], c.want)
			}
		})
	}
}

// TestBootstrapWithFastPermutation repeats the bootstrap with the optimised
// permutation running as Hemera₀, which also exercises it with a constant
// table other than the production one.
func TestBootstrapWithFastPermutation(t *testing.T) {
	var zero [144]uint64
	var s State
	var seed [blockBytes]byte
	copy(seed[:], "cyber")
	seed[5] = 0x01
	absorb(&s, &seed)
	s[laneLength] = 5
	permute(&s, &zero)
	var rc [144]uint64
	for n := 0; ; {
		copy(rc[n:], s[:Rate])
		n += Rate
		if n == len(rc) {
			break
		}
		permute(&s, &zero)
	}
	if rc != roundConstants {
		t.Fatal("fast Hemera₀ bootstrap differs from the embedded table")
	}
}

func TestHemera0FixesZero(t *testing.T) {
	// All-zero constants and state never leave zero; this drives the
	// partial S-box through 0^(−1) = 0 sixteen times.
	var zero [144]uint64
	var s, ref State
	permute(&s, &zero)
	refPermute((*[16]uint64)(&ref), &zero)
	if s != (State{}) || ref != (State{}) {
		t.Fatalf("Hemera₀(0) = %x / %x, want all zero", s, ref)
	}
}

// TestPrintConstants regenerates the Go literal for roundConstants:
//
//	HEMERA_PRINT_CONSTANTS=1 go test -run TestPrintConstants -v ./noxrunner/hemera
func TestPrintConstants(t *testing.T) {
	if os.Getenv("HEMERA_PRINT_CONSTANTS") == "" {
		t.Skip("set HEMERA_PRINT_CONSTANTS=1 to print the table")
	}
	rc := refBootstrap()
	var b strings.Builder
	for i, v := range rc {
		if i%4 == 0 {
			b.WriteString("\t")
		}
		fmt.Fprintf(&b, "0x%016x,", v)
		if i%4 == 3 {
			b.WriteString("\n")
		} else {
			b.WriteString(" ")
		}
	}
	fmt.Print(b.String())
}
