package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/cyberia-to/cyber-supervisor/protocol"
)

// defaultBudget is joy's DEFAULT_BUDGET.
const defaultBudget = 1_000_000

// options are the flags of the direct commands; each command registers
// the ones it takes.
type options struct {
	format      string
	inputValues *string // nil: not given
	inputFile   string
	budget      uint64
	output      string
	force       bool
	program     string
	claim       *string
	profile     string // prove: protocol.DefaultProveProfile; verify: "" (the certificate's)
	// artifactLimit caps the certificate prove writes and verify reads
	// (the job's limits.artifact_bytes).
	artifactLimit uint64
}

var errHelp = errors.New("help requested")

// commandUsage is each direct command's synopsis.
var commandUsage = map[string]string{
	"describe": "usage: nox-worker describe [--format human|json]\n",
	"run": `usage: nox-worker run INPUT [--input-values V1,V2 | --input-file F] [--budget N] [--format human|json]

Executes INPUT (a ProgramBundle .json or a raw .nox formula) in the public
stateless profile and prints one output value per line.
`,
	"prove": `usage: nox-worker prove INPUT [--output FILE] [--force] [--profile v2|v1] [--input-values V1,V2 | --input-file F] [--budget N] [--artifact-limit SIZE] [--format human|json]

Executes and certifies INPUT and writes the zstd-compressed certificate to
FILE (default: <input stem>.cnxt.zst next to INPUT); an existing file is
kept unless --force. --profile: v2 (cyber-nox-public-trace-v2, the
default: streamed to FILE as the run goes, in bounded memory) or v1
(cyber-nox-public-trace-v1, held whole until the run ends).
--artifact-limit caps the compressed certificate, e.g. 1GiB (default
32MiB, at most 64GiB): a longer one fails with artifact_too_large and
leaves no file.
`,
	"verify": `usage: nox-worker verify CERT [--program INPUT] [--claim V1,V2] [--input-values V1,V2 | --input-file F] [--budget N] [--profile v2|v1] [--artifact-limit SIZE] [--format human|json]

Checks the certificate CERT step by step, then against what you expect:
the program (--program), the inputs (--input-values/--input-file) and the
output (--claim); what you do not give is taken from the certificate and
reported as not checked. --budget is an upper bound on the certificate's
budget. --profile requires the certificate to be of that profile
(default: the profile its magic names). --artifact-limit caps CERT's
size (default 32MiB, at most 64GiB); a certificate over 32MiB is read
from its file as it is verified, never held. The human summary is not
for parsing: use --format json.
`,
}

// parseOptions parses a direct command's arguments. Flags may come before
// or after the positional arguments, as with joy; "--" ends the flags.
// Asked for with -h or --help, the command's usage goes to stdout.
func parseOptions(cmd string, args []string, stdout io.Writer) (*options, []string, error) {
	o := &options{format: "human", budget: defaultBudget}
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Func("format", "human or json", func(s string) error {
		if s != "human" && s != "json" {
			return errors.New("must be human or json")
		}
		o.format = s
		return nil
	})
	if cmd != "describe" {
		fs.Func("input-values", "ordered public inputs, comma separated", func(s string) error {
			o.inputValues = &s
			return nil
		})
		fs.StringVar(&o.inputFile, "input-file", "", "Joy input file (schema v1)")
		fs.Func("budget", "reduction budget", func(s string) error {
			v, err := protocol.ParseU64(s)
			if err != nil {
				return errors.New("not a canonical decimal u64")
			}
			o.budget = v
			return nil
		})
	}
	if cmd == "prove" || cmd == "verify" {
		o.artifactLimit = protocol.DefaultArtifactBytes
		fs.Func("artifact-limit", "cap of the certificate, e.g. 1GiB", func(s string) error {
			n, err := protocol.ParseBytes(s)
			if err != nil {
				return err
			}
			if n > protocol.MaxArtifactBytes {
				return fmt.Errorf("at most %s", protocol.FormatBytes(protocol.MaxArtifactBytes))
			}
			o.artifactLimit = n
			return nil
		})
		if cmd == "prove" {
			o.profile = protocol.DefaultProveProfile
		}
		fs.Func("profile", "certificate profile: v2 or v1", func(s string) error {
			p, err := protocol.ParseProfileFlag(s)
			if err != nil {
				return errors.New("must be v2 or v1 (or the profile's full id)")
			}
			o.profile = p
			return nil
		})
	}
	switch cmd {
	case "prove":
		fs.StringVar(&o.output, "output", "", "certificate file")
		fs.BoolVar(&o.force, "force", false, "replace an existing certificate file")
	case "verify":
		fs.StringVar(&o.program, "program", "", "the program the certificate must be about")
		fs.Func("claim", "the expected output, comma separated", func(s string) error {
			o.claim = &s
			return nil
		})
	}
	pos, err := parseInterleaved(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(stdout, cmd, commandUsage[cmd], o.format == "json" || wantsJSON(args))
		return o, nil, errHelp
	}
	if err != nil {
		return o, nil, protocol.Errorf(protocol.CodeInvalidJob, "%s", err)
	}
	if o.inputValues != nil && o.inputFile != "" {
		return o, nil, protocol.Errorf(protocol.CodeInvalidJob, "--input-values and --input-file conflict: give one")
	}
	return o, pos, nil
}

// parseInterleaved lets flags follow positional arguments: flag.Parse
// stops at the first non-flag, so parsing resumes after each one.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if i := len(args) - len(rest); i > 0 && args[i-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// printHelp prints a command's usage on stdout: as text, or with
// --format json as the result of one cyber/cli/v1 envelope, {"help":
// TEXT}, as every other output of --format json is an envelope.
func printHelp(stdout io.Writer, cmd, text string, json bool) {
	if !json {
		fmt.Fprint(stdout, text)
		return
	}
	protocol.WriteEnvelope(stdout, cmd, struct {
		Help string `json:"help"`
	}{text}, nil)
}

// wantsJSON finds --format json before the arguments are parsed, so that
// even a usage error is reported as the envelope a program expects.
// The last --format wins, as in flag parsing.
func wantsJSON(args []string) bool {
	json := false
	for i, a := range args {
		if a == "--" {
			break
		}
		if val, _, ok := formatFlag(args, i); ok {
			json = val == "json"
		}
	}
	return json
}

// formatFlag reports whether args[i] is a --format flag (-format,
// --format V, --format=V) and its value; inNext says the value is the
// next argument (V alone, "" when there is none).
func formatFlag(args []string, i int) (val string, inNext, ok bool) {
	name, val, hasVal := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
	if !strings.HasPrefix(args[i], "-") || name != "format" {
		return "", false, false
	}
	if !hasVal && i+1 < len(args) {
		val = args[i+1]
	}
	return val, !hasVal, true
}
